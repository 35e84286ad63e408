//go:build !unix

package netcase

import "math"

// RaiseFileLimit returns no limit: the system has none that the package knows of.
func RaiseFileLimit() uint64 { return math.MaxUint64 }
