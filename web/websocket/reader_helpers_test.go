package websocket_test

import (
	"bufio"
	"net"
)

func newReader(nc net.Conn) *bufio.Reader { return bufio.NewReaderSize(nc, 1<<16) }
