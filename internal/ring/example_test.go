package ring_test

import (
	"fmt"

	"github.com/spindle-rt/spindle/internal/ring"
)

func ExampleRing() {
	var r ring.Ring[string]
	r.Push("b")
	r.Push("c")
	r.PushFront("a")
	for r.Len() > 0 {
		v, _ := r.Pop()
		fmt.Print(v, " ")
	}
	fmt.Println()
	// Output: a b c
}
