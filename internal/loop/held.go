package loop

import (
	"unsafe"

	"github.com/spindle-rt/spindle/internal/frame"
)

// Held returns the loop that the calling goroutine holds (it runs one of
// the loop's callbacks or task bodies), or nil. It looks through every loop
// made (frame.HeldLoop): it is for rare paths, not hot ones.
func Held() *Loop {
	h := frame.HeldLoop()
	if h == nil {
		return nil
	}
	// Only loops register a Holder, and the Holder is a Loop's first field.
	return (*Loop)(unsafe.Pointer(h))
}

// The Holder must be Loop's first field for Held: this fails to compile
// otherwise.
var _ = [1]struct{}{}[unsafe.Offsetof(Loop{}.Holder)]
