//go:build !unix

package cputime

import "time"

// Process is not measured on this system: it returns false, and the cases
// that report CPU time report none.
func Process() (time.Duration, bool) { return 0, false }
