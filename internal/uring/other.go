//go:build !linux || purego

package uring

import (
	"errors"

	"github.com/spindle-rt/spindle/internal/loop"
)

// Ring is a loop's io_uring; this build has none.
type Ring struct{}

// ErrUnsupported is Of's error in a build without io_uring.
var ErrUnsupported = errors.New("uring: no io_uring in this build (-tags purego, or not Linux)")

// Of returns nil: this build has no io_uring.
func Of(*loop.Loop) (*Ring, error) { return nil, ErrUnsupported }

// Existing returns nil: this build has no io_uring.
func Existing(*loop.Loop) *Ring { return nil }

// Decline does nothing: this build has no io_uring.
func Decline(*loop.Loop, bool) {}

// Declined reports false: this build has no io_uring.
func Declined(*loop.Loop) bool { return false }
