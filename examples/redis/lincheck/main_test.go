package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func set(client int, k, v string, call, ret int64) Op {
	return Op{Client: client, Part: k, Cmds: [][]string{{"SET", k, v}}, Call: call, Return: ret, Reply: okReply}
}

func get(client int, k, reply string, call, ret int64) Op {
	return Op{Client: client, Part: k, Cmds: [][]string{{"GET", k}}, Call: call, Return: ret, Reply: reply}
}

// The checker accepts the histories that could have happened and refuses
// the others, with a visualization.
func TestCheck(t *testing.T) {
	grp := func(client int, tx bool, reply string, call, ret int64, cmds ...[]string) Op {
		return Op{Client: client, Part: "grp", Cmds: cmds, Tx: tx, Call: call, Return: ret, Reply: reply}
	}
	cases := []struct {
		name string
		h    History
		ok   bool
	}{
		{"a read after a write sees it", History{Ops: []Op{set(1, "k", "a", 1, 2), get(2, "k", bulk("a"), 3, 4)}}, true},
		{"a stale read after a write", History{Ops: []Op{set(1, "k", "a", 1, 2), get(2, "k", nilBulk, 3, 4)}}, false},
		{"a read concurrent with a write may miss it", History{Ops: []Op{set(1, "k", "a", 1, 4), get(2, "k", nilBulk, 2, 3)}}, true},
		{"the initial keyspace", History{Init: map[string]string{"k": "z"}, Ops: []Op{get(2, "k", bulk("z"), 1, 2)}}, true},
		{"an unknown write may have happened", History{Ops: []Op{
			{Client: 1, Part: "k", Cmds: [][]string{{"SET", "k", "a"}}, Call: 1, Unknown: true},
			get(2, "k", bulk("a"), 5, 6)}}, true},
		{"or not", History{Ops: []Op{
			{Client: 1, Part: "k", Cmds: [][]string{{"SET", "k", "a"}}, Call: 1, Unknown: true},
			get(2, "k", nilBulk, 5, 6)}}, true},
		{"but not both", History{Ops: []Op{
			{Client: 1, Part: "k", Cmds: [][]string{{"SET", "k", "a"}}, Call: 1, Unknown: true},
			get(2, "k", bulk("a"), 5, 6), get(2, "k", nilBulk, 7, 8)}}, false},
		{"an unknown write happened by its return, or never", History{Ops: []Op{
			{Client: 1, Part: "k", Cmds: [][]string{{"SET", "k", "a"}}, Call: 1, Return: 3, Unknown: true},
			get(2, "k", nilBulk, 4, 5), get(2, "k", nilBulk, 6, 7)}}, true},
		{"not after its return", History{Ops: []Op{
			{Client: 1, Part: "k", Cmds: [][]string{{"SET", "k", "a"}}, Call: 1, Return: 3, Unknown: true},
			get(2, "k", nilBulk, 4, 5), get(2, "k", bulk("a"), 6, 7)}}, false},
		{"a counter", History{Ops: []Op{
			{Client: 1, Part: "n", Cmds: [][]string{{"INCR", "n"}}, Call: 1, Return: 2, Reply: ":1\r\n"},
			{Client: 1, Part: "n", Cmds: [][]string{{"INCR", "n"}}, Call: 3, Return: 4, Reply: ":2\r\n"},
			{Client: 2, Part: "n", Cmds: [][]string{{"DEL", "n"}}, Call: 5, Return: 6, Reply: ":1\r\n"},
			{Client: 2, Part: "n", Cmds: [][]string{{"INCR", "n"}}, Call: 7, Return: 8, Reply: ":1\r\n"}}}, true},
		{"INCR of a string", History{Ops: []Op{set(1, "n", "x", 1, 2),
			{Client: 1, Part: "n", Cmds: [][]string{{"INCR", "n"}}, Call: 3, Return: 4, Reply: notInt}}}, true},
		{"MSET is seen whole", History{Ops: []Op{
			grp(1, false, okReply, 1, 2, []string{"MSET", "a", "1", "b", "1"}),
			grp(2, false, "*2\r\n"+bulk("1")+bulk("1"), 3, 4, []string{"MGET", "a", "b"})}}, true},
		{"MSET seen in part", History{Ops: []Op{
			grp(1, false, okReply, 1, 4, []string{"MSET", "a", "1", "b", "1"}),
			grp(2, false, "*2\r\n"+bulk("1")+nilBulk, 2, 3, []string{"MGET", "a", "b"})}}, false},
		{"a transaction", History{Ops: []Op{
			grp(1, true, "*3\r\n"+okReply+nilBulk+":1\r\n", 1, 2, []string{"SET", "a", "1"}, []string{"GET", "b"}, []string{"DEL", "a"}),
			grp(2, false, "*2\r\n"+nilBulk+nilBulk, 3, 4, []string{"MGET", "a", "b"})}}, true},
		{"a transaction seen in part", History{Ops: []Op{
			grp(1, true, "*2\r\n"+okReply+okReply, 1, 4, []string{"SET", "a", "1"}, []string{"SET", "b", "1"}),
			grp(2, false, "*2\r\n"+bulk("1")+nilBulk, 2, 3, []string{"MGET", "a", "b"})}}, false},
	}
	vis := t.TempDir()
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.h.Name = tc.name
			msg := check("case", i, tc.h, vis, 10*time.Second)
			if (msg == "") != tc.ok {
				t.Fatalf("check: %q, want ok %v", msg, tc.ok)
			}
			if msg == "" {
				return
			}
			name := msg[strings.LastIndex(msg, " ")+1:]
			if filepath.Dir(name) != vis {
				t.Fatalf("the visualization %s is not in %s", name, vis)
			}
			b, err := os.ReadFile(name)
			if err != nil || !strings.Contains(string(b), "<html") {
				t.Fatalf("the visualization %s: %v", name, err)
			}
		})
	}
}

// An operation the model does not know is refused, not taken as
// linearizable.
func TestCheckRefusesUnknownCommands(t *testing.T) {
	h := History{Name: "x", Ops: []Op{{Client: 1, Part: "k", Cmds: [][]string{{"LPUSH", "k", "a"}}, Call: 1, Return: 2, Reply: ":1\r\n"}}}
	if msg := check("x", 0, h, t.TempDir(), time.Second); !strings.Contains(msg, "does not know") {
		t.Fatalf("check: %q", msg)
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
