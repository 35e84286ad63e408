// Package wsclient is a small blocking WebSocket client over package net,
// for tests and benchmarks: it sends frames exactly as told (masked or
// not, fragmented, with reserved bits, bad lengths), so a test can send
// what a correct client never would.
package wsclient

import (
	"bufio"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// Opcodes.
const (
	OpContinuation = 0x0
	OpText         = 0x1
	OpBinary       = 0x2
	OpClose        = 0x8
	OpPing         = 0x9
	OpPong         = 0xA
)

// Client is one client connection.
type Client struct {
	C   net.Conn
	R   *bufio.Reader
	Key [4]byte // the mask key of every frame it sends
	Res *http.Response
}

// Dial connects to addr and upgrades path (GET, version 13).
func Dial(addr, path string) (*Client, error) {
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	c, err := Handshake(nc, addr, path)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return c, nil
}

// Handshake upgrades path on nc: it fails unless the answer is 101 with the
// right Sec-WebSocket-Accept.
func Handshake(nc net.Conn, host, path string) (*Client, error) {
	var kb [16]byte
	rand.Read(kb[:])
	key := base64.StdEncoding.EncodeToString(kb[:])
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: " + key + "\r\n\r\n"
	if _, err := io.WriteString(nc, req); err != nil {
		return nil, err
	}
	c := &Client{C: nc, R: bufio.NewReaderSize(nc, 4096), Key: [4]byte{0x12, 0x34, 0x56, 0x78}}
	res, err := http.ReadResponse(c.R, nil)
	if err != nil {
		return nil, err
	}
	c.Res = res
	if res.StatusCode != 101 {
		return nil, fmt.Errorf("wsclient: upgrade answered %s", res.Status)
	}
	if got, want := res.Header.Get("Sec-WebSocket-Accept"), accept(key); got != want {
		return nil, fmt.Errorf("wsclient: Sec-WebSocket-Accept %q, want %q", got, want)
	}
	if !strings.EqualFold(res.Header.Get("Upgrade"), "websocket") {
		return nil, errors.New("wsclient: no Upgrade: websocket in the answer")
	}
	return c, nil
}

func accept(key string) string {
	h := sha1sum([]byte(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
	return base64.StdEncoding.EncodeToString(h[:])
}

// Frame is a frame as sent or received, reserved bits included.
type Frame struct {
	Fin     bool
	Rsv     byte // the three reserved bits, in place (0x70)
	Op      byte
	Payload []byte
}

// AppendFrame appends f, masked with key when mask is true, to b.
func AppendFrame(b []byte, f Frame, mask bool, key [4]byte) []byte {
	b0 := f.Op | f.Rsv
	if f.Fin {
		b0 |= 0x80
	}
	var mb byte
	if mask {
		mb = 0x80
	}
	n := len(f.Payload)
	switch {
	case n <= 125:
		b = append(b, b0, mb|byte(n))
	case n <= 0xFFFF:
		b = append(b, b0, mb|126, byte(n>>8), byte(n))
	default:
		b = binary.BigEndian.AppendUint64(append(b, b0, mb|127), uint64(n))
	}
	if !mask {
		return append(b, f.Payload...)
	}
	b = append(b, key[:]...)
	for i, x := range f.Payload {
		b = append(b, x^key[i&3])
	}
	return b
}

// Send writes frames, masked.
func (c *Client) Send(fs ...Frame) error {
	var b []byte
	for _, f := range fs {
		b = AppendFrame(b, f, true, c.Key)
	}
	_, err := c.C.Write(b)
	return err
}

// SendRaw writes b as it is.
func (c *Client) SendRaw(b []byte) error {
	_, err := c.C.Write(b)
	return err
}

// Text sends one text message.
func (c *Client) Text(s string) error {
	return c.Send(Frame{Fin: true, Op: OpText, Payload: []byte(s)})
}

// Binary sends one binary message.
func (c *Client) Binary(p []byte) error { return c.Send(Frame{Fin: true, Op: OpBinary, Payload: p}) }

// Read reads one frame (the server's frames are not masked; a masked one
// is an error).
func (c *Client) Read() (Frame, error) {
	var h [2]byte
	if _, err := io.ReadFull(c.R, h[:]); err != nil {
		return Frame{}, err
	}
	f := Frame{Fin: h[0]&0x80 != 0, Rsv: h[0] & 0x70, Op: h[0] & 0x0F}
	if h[1]&0x80 != 0 {
		return f, errors.New("wsclient: masked frame from the server")
	}
	n := uint64(h[1] & 0x7F)
	switch n {
	case 126:
		var e [2]byte
		if _, err := io.ReadFull(c.R, e[:]); err != nil {
			return f, err
		}
		n = uint64(binary.BigEndian.Uint16(e[:]))
	case 127:
		var e [8]byte
		if _, err := io.ReadFull(c.R, e[:]); err != nil {
			return f, err
		}
		n = binary.BigEndian.Uint64(e[:])
	}
	if n > 64<<20 {
		return f, fmt.Errorf("wsclient: frame of %d bytes", n)
	}
	f.Payload = make([]byte, n)
	_, err := io.ReadFull(c.R, f.Payload)
	return f, err
}

// ReadMessage reads frames until a whole data message, answering nothing:
// control frames in between are returned as they come (op is theirs).
func (c *Client) ReadMessage() (op byte, p []byte, err error) {
	var msg []byte
	var mop byte
	for {
		f, err := c.Read()
		if err != nil {
			return 0, nil, err
		}
		if f.Op >= 0x8 {
			return f.Op, f.Payload, nil
		}
		if f.Op != OpContinuation {
			mop = f.Op
		}
		msg = append(msg, f.Payload...)
		if f.Fin {
			return mop, msg, nil
		}
	}
}

// CloseCode returns the code of a close frame's payload (1005 if none).
func CloseCode(p []byte) int {
	if len(p) < 2 {
		return 1005
	}
	return int(binary.BigEndian.Uint16(p))
}

// ClosePayload returns a close frame's payload for code and text.
func ClosePayload(code int, text string) []byte {
	return append([]byte{byte(code >> 8), byte(code)}, text...)
}

// ExpectClose reads frames until a close frame and returns its code,
// skipping data and pongs; then it checks the server closes the TCP
// connection: EOF, or a reset (the kernel's answer to bytes the client
// was still sending when the server closed, after a message too big).
func (c *Client) ExpectClose() (int, error) {
	for {
		f, err := c.Read()
		if err != nil {
			return 0, err
		}
		if f.Op == OpClose {
			code := CloseCode(f.Payload)
			c.C.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := io.Copy(io.Discard, c.R); err != nil && !errors.Is(err, syscall.ECONNRESET) {
				return code, fmt.Errorf("wsclient: after the close frame: %w", err)
			}
			return code, nil
		}
	}
}

// Close closes the TCP connection.
func (c *Client) Close() error { return c.C.Close() }
