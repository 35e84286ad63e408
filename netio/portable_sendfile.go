//go:build !linux || purego

package netio

import "github.com/spindle-rt/spindle/future"

// sendFile: package net's sockets send a file by the copy path.
func (b *portableBackend) sendFile(*Conn, *fileOut) (*future.Future[struct{}], bool) {
	return nil, false
}
