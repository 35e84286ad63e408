//go:build !unix

package main

import "time"

// processCPU is not measured on this system: cases then report no
// cpu-ns figure.
func processCPU() (time.Duration, bool) { return 0, false }
