//go:build !linux

package sim

import "os"

// parentStdout is nil where the go command's output cannot be reached:
// the lines go to the test's output, shown with -v.
func parentStdout() *os.File { return nil }
