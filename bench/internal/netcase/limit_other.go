//go:build !unix

package netcase

import "math"

// raiseFileLimit: the system has no such limit that the package knows of.
func raiseFileLimit() uint64 { return math.MaxUint64 }
