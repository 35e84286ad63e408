package netio_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
)

// A line server: ReadLines calls the function with every line as it
// arrives, on the loop, without a copy when the line is in one receive.
// Its future ends with the error that ended the reading (io.EOF here).
func ExampleReader_ReadLines() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	netio.Serve(l, func(c *netio.Conn) {
		netio.NewReader(c, 1024).ReadLines(func(line []byte) error {
			c.Write(bytes.ToUpper(line))
			c.WriteString("\n")
			return nil
		}).OnComplete(func(_ struct{}, err error) {
			fmt.Fprintf(c, "bye (%v)\n", err)
			c.Close()
		})
	})

	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	io.WriteString(nc, "hello\r\nsplit ")
	io.WriteString(nc, "line\n")
	nc.(*net.TCPConn).CloseWrite()
	out, _ := io.ReadAll(nc)
	fmt.Print(string(out))
	// Output:
	// HELLO
	// SPLIT LINE
	// bye (EOF)
}

// In a spawned task, NextLine and NextN suspend the task until the bytes
// are there: here a length line, then that many bytes.
func ExampleReader_NextLine() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	netio.Serve(l, func(c *netio.Conn) {
		future.Spawn(ex, func(ctx context.Context) (struct{}, error) {
			defer c.Close()
			r := netio.NewReader(c, 1024)
			for {
				line, err := r.NextLine(ctx)
				if err != nil {
					return struct{}{}, nil
				}
				var n int
				if _, err := fmt.Sscanf(string(line), "%d", &n); err != nil {
					fmt.Fprintf(c, "bad length %q\n", line)
					return struct{}{}, nil
				}
				body, err := r.NextN(ctx, n)
				if err != nil {
					return struct{}{}, nil
				}
				fmt.Fprintf(c, "got %d bytes: %s\n", n, body)
			}
		})
	})

	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	io.WriteString(nc, "5\nhello11\nhello world")
	nc.(*net.TCPConn).CloseWrite()
	out, _ := io.ReadAll(nc)
	fmt.Print(string(out))
	// Output:
	// got 5 bytes: hello
	// got 11 bytes: hello world
}

// A read that times out loses nothing: the bytes that arrive later go to
// the next read.
func ExampleConn_SetReadDeadline() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	c, err := l.Accept().Await(context.Background())
	if err != nil {
		fmt.Println(err)
		return
	}
	first := make(chan error, 1)
	next := future.Spawn(ex, func(ctx context.Context) (string, error) {
		c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
		_, err := c.Recv().Await(ctx)
		first <- err
		c.SetReadDeadline(time.Time{})
		b, err := c.Recv().Await(ctx)
		return string(b), err
	})
	err = <-first
	fmt.Println("first read:", errors.Is(err, os.ErrDeadlineExceeded))
	io.WriteString(nc, "late bytes")
	b, err := next.Await(context.Background())
	fmt.Printf("next read: %q %v\n", b, err)
	// Output:
	// first read: true
	// next read: "late bytes" <nil>
}

// A Server tracks the connections it accepted, on each loop, and shuts
// them down together: Shutdown stops accepting, fails the reads that would
// wait with ErrServerClosed, and returns once every connection has closed
// and sent what was written to it.
func ExampleServer_Shutdown() {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	l, err := netio.Listen(ex, "tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := &netio.Server{Handler: func(c *netio.Conn) {
		netio.NewReader(c, 0).ReadLines(func(line []byte) error {
			fmt.Fprintf(c, "echo: %s\n", line)
			return nil
		}).OnComplete(func(_ struct{}, err error) {
			if errors.Is(err, netio.ErrServerClosed) {
				c.WriteString("server going away\n")
			}
			c.Close() // sends what was written first
		})
	}}
	srv.Serve(l)

	nc, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer nc.Close()
	br := bufio.NewReader(nc)
	io.WriteString(nc, "hi\n")
	s, _ := br.ReadString('\n')
	fmt.Print(s)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fmt.Println("shutdown:", srv.Shutdown(ctx))
	rest, _ := io.ReadAll(br)
	fmt.Print(string(rest))
	// Output:
	// echo: hi
	// shutdown: <nil>
	// server going away
}
