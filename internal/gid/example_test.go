package gid_test

import (
	"fmt"

	"github.com/spindle-rt/spindle/internal/gid"
)

func ExampleCurrent() {
	me := gid.Current()
	other := make(chan uintptr)
	go func() { other <- gid.Current() }()
	fmt.Println("same goroutine:", me == gid.Current())
	fmt.Println("another goroutine:", me == <-other)
	// Output:
	// same goroutine: true
	// another goroutine: false
}
