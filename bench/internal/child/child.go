// Package child starts the helper processes of the benchmarks: a server or
// a load generator that the benchmark talks to over its standard input
// (commands, one a line) and standard output (answers), while its standard
// error goes to the benchmark's.
package child

import (
	"bufio"
	"io"
	"os"
	"os/exec"
)

// Start starts cmd with its standard error on this process's and returns
// the write end of its standard input and a reader of its standard output.
// Closing in tells a child that reads commands to stop; the caller waits
// for cmd.
func Start(cmd *exec.Cmd) (in io.WriteCloser, out *bufio.Reader, err error) {
	cmd.Stderr = os.Stderr
	in, err = cmd.StdinPipe()
	if err != nil {
		return nil, nil, err
	}
	o, err := cmd.StdoutPipe()
	if err != nil {
		in.Close()
		return nil, nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, nil, err // Start closes the pipes it made
	}
	return in, bufio.NewReader(o), nil
}
