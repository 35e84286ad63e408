package main

import (
	"bytes"
	"regexp"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestHoldSmall runs the load test at a small scale: 300 idle WebSockets
// from 3 client processes, 5 active clients; every phase reports.
func TestHoldSmall(t *testing.T) {
	var out bytes.Buffer
	if err := run(config{server: "spindle", idle: 300, procs: 3, active: 5, rounds: 20}, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.Bytes())
	}
	for _, want := range []string{
		`(?m)^no idle: +p50 \S+ +p99 \S+ +server CPU`,
		`(?m)^opened 300 idle WebSockets in `,
		`(?m)^server RSS: +[0-9.]+ MB -> [0-9.]+ MB \(\+-?[0-9.]+ MB, -?[0-9]+ B/conn\)`,
		`(?m)^live heap\+stack [0-9.]+ MB -> [0-9.]+ MB`,
		`(?m)^with 300 idle: +p50 `,
		`(?m)^idle closed: +p50 `,
	} {
		if !regexp.MustCompile(want).Match(out.Bytes()) {
			t.Errorf("no line matching %s in\n%s", want, out.Bytes())
		}
	}
}

// TestBadConfig: flags out of range fail before anything starts.
func TestBadConfig(t *testing.T) {
	for _, cfg := range []config{
		{server: "spindle", idle: -1, procs: 1, active: 1, rounds: 1},
		{server: "spindle", idle: 10, procs: 0, active: 1, rounds: 1},
		{server: "spindle", idle: 10, procs: 1, active: 0, rounds: 1},
		{server: "gorilla", idle: 10, procs: 1, active: 1, rounds: 1, heap: "x"},
		{server: "nginx", idle: 10, procs: 1, active: 1, rounds: 1},
	} {
		if err := run(cfg, new(bytes.Buffer)); err == nil {
			t.Errorf("run(%+v) = nil, want an error", cfg)
		}
	}
}
