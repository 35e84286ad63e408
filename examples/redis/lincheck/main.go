// Command lincheck checks histories of Redis commands for
// linearizability with porcupine (github.com/anishathalye/porcupine).
//
// It reads one JSON document on its standard input (the shape of Input),
// checks each history in it, and exits with status 0 if every history is
// linearizable, 1 if one is not (or the check could not decide within
// -timeout), 2 on bad input. For a history that fails it writes
// porcupine's visualization (an HTML page) into the -vis directory and
// prints its path.
//
// The model: a keyspace of strings (a key is absent or holds a string),
// and the commands SET, GET, DEL, INCR, MSET, MGET, alone or as
// one MULTI/EXEC transaction (the operation's commands, whose reply is
// EXEC's array). Each operation names its partition: operations on
// disjoint keys are checked apart (porcupine's partitions), and the
// commands over several keys are given one partition for the keys they
// share, so that a group of keys is modeled as one state. An operation
// whose outcome is unknown (a request in flight when its server crashed,
// or whose connection ended before the reply) has Unknown set: it may or
// may not have happened, and any reply is accepted. Its Return, when
// given (not 0), is the time by which it had happened if it did (its
// server crashed then, or answered its connection with a close after it
// ran): the model then takes it as happening between its call and that
// time, or not at all; without one it may happen at any time after its
// call (a request whose client gave up waiting).
//
// It is a module of its own so that the library's go.mod does not
// require porcupine; examples/redis's crash simulation builds it and
// pipes each seed's history to it.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
)

// Input is the document lincheck reads.
type Input struct {
	// Name names the run (a seed): it starts the visualization's file name.
	Name      string    `json:"name"`
	Histories []History `json:"histories"`
}

// History is one history to check, from an initial keyspace.
type History struct {
	Name string            `json:"name"`
	Init map[string]string `json:"init"`
	Ops  []Op              `json:"ops"`
}

// Op is one operation: its commands, when it was called and returned
// (any unit, one clock), its reply, and its partition.
type Op struct {
	Client int        `json:"client"`
	Part   string     `json:"part"`
	Cmds   [][]string `json:"cmds"`
	Tx     bool       `json:"tx"` // MULTI/EXEC around Cmds
	Call   int64      `json:"call"`
	Return int64      `json:"return"`
	Reply  string     `json:"reply"` // the raw RESP reply
	// Unknown: no reply came; the operation may or may not have happened,
	// by Return if Return is not 0.
	Unknown bool `json:"unknown"`
}

type state map[string]string

// keys returns the state's keys in order.
func (s state) keys() []string {
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

type input struct {
	cmds [][]string
	tx   bool
}

type output struct {
	reply   string
	unknown bool
}

func main() {
	vis := flag.String("vis", os.TempDir(), "the directory where the visualization of a history that fails goes")
	timeout := flag.Duration("timeout", 30*time.Second, "how long the check of one history may take")
	flag.Parse()
	var in Input
	dec := json.NewDecoder(os.Stdin)
	if err := dec.Decode(&in); err != nil {
		fmt.Fprintf(os.Stderr, "lincheck: reading the histories: %v\n", err)
		os.Exit(2)
	}
	bad := 0
	for i, h := range in.Histories {
		if msg := check(in.Name, i, h, *vis, *timeout); msg != "" {
			fmt.Println(msg)
			bad++
		}
	}
	if bad > 0 {
		os.Exit(1)
	}
}

// check checks one history and returns what is wrong with it, or "".
func check(run string, i int, h History, vis string, timeout time.Duration) string {
	model := newModel(h.Init)
	ops := make([]porcupine.Operation, 0, len(h.Ops))
	clients := map[int]int{}
	for _, o := range h.Ops {
		id, ok := clients[o.Client]
		if !ok {
			id = len(clients)
			clients[o.Client] = id
		}
		ret := o.Return
		if o.Unknown && ret == 0 {
			ret = math.MaxInt64
		}
		if err := validate(o); err != "" {
			return fmt.Sprintf("history %s: %s", h.Name, err)
		}
		ops = append(ops, porcupine.Operation{
			ClientId: id, Call: o.Call, Return: ret,
			Input: input{o.Cmds, o.Tx}, Output: output{o.Reply, o.Unknown}, Metadata: o.Part,
		})
	}
	res, info := porcupine.CheckOperationsVerbose(model, ops, timeout)
	if res == porcupine.Ok {
		return ""
	}
	what := "is not linearizable"
	if res == porcupine.Unknown {
		what = fmt.Sprintf("could not be decided in %v", timeout)
	}
	name := fmt.Sprintf("%s-history%d.html", sanitize(run), i)
	path := filepath.Join(vis, name)
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		return fmt.Sprintf("history %s (%d operations) %s; its visualization: %v", h.Name, len(ops), what, err)
	}
	return fmt.Sprintf("history %s (%d operations) %s; visualization: %s", h.Name, len(ops), what, path)
}

func sanitize(s string) string {
	if s == "" {
		return "history"
	}
	return strings.Map(func(r rune) rune {
		if r == '/' || r == ' ' || r == os.PathSeparator {
			return '_'
		}
		return r
	}, s)
}

// validate returns what is wrong with an operation's commands, or "".
func validate(o Op) string {
	if len(o.Cmds) == 0 {
		return "an operation without commands"
	}
	if (!o.Unknown || o.Return != 0) && o.Return < o.Call {
		return fmt.Sprintf("an operation that returns (%d) before its call (%d)", o.Return, o.Call)
	}
	for _, c := range o.Cmds {
		if _, err := apply(state{}, c); err != "" {
			return err
		}
	}
	return ""
}

// newModel returns the model: nondeterministic, since an operation with
// an unknown outcome leads to two states, one where it happened and one
// where it did not.
func newModel(init map[string]string) porcupine.Model {
	m := porcupine.NondeterministicModel{
		Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
			parts := map[string][]porcupine.Operation{}
			var names []string
			for _, o := range history {
				p := o.Metadata.(string)
				if _, ok := parts[p]; !ok {
					names = append(names, p)
				}
				parts[p] = append(parts[p], o)
			}
			slices.Sort(names)
			out := make([][]porcupine.Operation, 0, len(names))
			for _, n := range names {
				out = append(out, parts[n])
			}
			return out
		},
		Init: func() []interface{} {
			s := state{}
			for k, v := range init {
				s[k] = v
			}
			return []interface{}{s}
		},
		Step: func(st, in, out interface{}) []interface{} {
			next, reply := run(st.(state), in.(input))
			o := out.(output)
			switch {
			case o.unknown:
				return []interface{}{next, st} // it happened, or not
			case o.reply == reply:
				return []interface{}{next}
			}
			return nil
		},
		Equal: func(a, b interface{}) bool {
			x, y := a.(state), b.(state)
			if len(x) != len(y) {
				return false
			}
			for k, v := range x {
				if w, ok := y[k]; !ok || w != v {
					return false
				}
			}
			return true
		},
		Hash: func(st interface{}) uint64 {
			s := st.(state)
			h := fnv.New64a()
			for _, k := range s.keys() {
				io.WriteString(h, k)
				h.Write([]byte{0})
				io.WriteString(h, s[k])
				h.Write([]byte{0})
			}
			return h.Sum64()
		},
		DescribeOperation: func(in, out interface{}) string {
			i, o := in.(input), out.(output)
			var b strings.Builder
			if i.tx {
				b.WriteString("MULTI ")
			}
			for n, c := range i.cmds {
				if n > 0 {
					b.WriteString("; ")
				}
				b.WriteString(strings.Join(c, " "))
			}
			if i.tx {
				b.WriteString(" EXEC")
			}
			if o.unknown {
				return b.String() + " -> ?"
			}
			return b.String() + " -> " + strconv.Quote(o.reply)
		},
		DescribeState: func(st interface{}) string {
			s := st.(state)
			keys := s.keys()
			parts := make([]string, len(keys))
			for i, k := range keys {
				parts[i] = k + "=" + s[k]
			}
			return "{" + strings.Join(parts, " ") + "}"
		},
	}
	return m.ToModel()
}

// run applies an operation to a copy of s and returns the new state and
// the reply the server would give.
func run(s state, in input) (state, string) {
	next := make(state, len(s)+1)
	for k, v := range s {
		next[k] = v
	}
	if !in.tx {
		r, _ := apply(next, in.cmds[0])
		return next, r
	}
	reply := "*" + strconv.Itoa(len(in.cmds)) + "\r\n"
	for _, c := range in.cmds {
		r, _ := apply(next, c)
		reply += r
	}
	return next, reply
}

func bulk(v string) string { return "$" + strconv.Itoa(len(v)) + "\r\n" + v + "\r\n" }

func integer(n int64) string { return ":" + strconv.FormatInt(n, 10) + "\r\n" }

const (
	nilBulk = "$-1\r\n"
	okReply = "+OK\r\n"
	notInt  = "-ERR value is not an integer or out of range\r\n"
)

// apply runs one command on s (changed in place) and returns its reply,
// or an error for a command the model does not know.
func apply(s state, c []string) (string, string) {
	if len(c) == 0 {
		return "", "an empty command"
	}
	args := c[1:]
	arity := func(ok bool) string {
		if ok {
			return ""
		}
		return fmt.Sprintf("%q: wrong number of arguments", c)
	}
	switch strings.ToUpper(c[0]) {
	case "SET":
		if e := arity(len(args) == 2); e != "" {
			return "", e
		}
		s[args[0]] = args[1]
		return okReply, ""
	case "GET":
		if e := arity(len(args) == 1); e != "" {
			return "", e
		}
		v, ok := s[args[0]]
		if !ok {
			return nilBulk, ""
		}
		return bulk(v), ""
	case "DEL":
		if e := arity(len(args) >= 1); e != "" {
			return "", e
		}
		var n int64
		for _, k := range args {
			if _, ok := s[k]; ok {
				delete(s, k)
				n++
			}
		}
		return integer(n), ""
	case "INCR":
		if e := arity(len(args) == 1); e != "" {
			return "", e
		}
		v, ok := s[args[0]]
		var n int64
		if ok {
			var err error
			n, err = strconv.ParseInt(v, 10, 64)
			if err != nil || strconv.FormatInt(n, 10) != v || n == math.MaxInt64 {
				return notInt, ""
			}
		}
		n++
		s[args[0]] = strconv.FormatInt(n, 10)
		return integer(n), ""
	case "MSET":
		if e := arity(len(args) >= 2 && len(args)%2 == 0); e != "" {
			return "", e
		}
		for i := 0; i < len(args); i += 2 {
			s[args[i]] = args[i+1]
		}
		return okReply, ""
	case "MGET":
		if e := arity(len(args) >= 1); e != "" {
			return "", e
		}
		r := "*" + strconv.Itoa(len(args)) + "\r\n"
		for _, k := range args {
			if v, ok := s[k]; ok {
				r += bulk(v)
			} else {
				r += nilBulk
			}
		}
		return r, ""
	}
	return "", fmt.Sprintf("%q: a command the model does not know", c)
}
