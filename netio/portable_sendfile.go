//go:build !linux || purego

package netio

import "github.com/spindle-rt/spindle/future"

// zeroCopy reports whether c's SendFile goes by sendfile(2): never here.
func (c *Conn) zeroCopy() bool { return false }

func (c *Conn) startZeroCopy(*fileOut) *future.Future[struct{}] { panic("unreachable") }
