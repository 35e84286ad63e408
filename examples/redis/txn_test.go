package main

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a lockOwner that records its grants and may release at once.
type recorder struct {
	name    string
	log     *[]string
	release bool // release the claim as soon as it is granted
	req     lockReq
}

func (r *recorder) granted(st *shardState, _ int) {
	*r.log = append(*r.log, r.name)
	if r.release {
		st.release(&r.req)
	}
}

// Claims on one shard are granted in the order they were queued on each
// of their keys, once they head every queue, and leave nothing behind.
func TestClaims(t *testing.T) {
	type action = claimAction
	for _, tc := range []struct {
		name    string
		actions []action
		want    string // the grants, in order
	}{
		{"free keys at once", []action{
			{acquire: "a", keys: []string{"x", "y"}},
			{acquire: "b", keys: []string{"z"}},
		}, "a b"},
		{"fifo on a key", []action{
			{acquire: "a", keys: []string{"x"}},
			{acquire: "b", keys: []string{"x"}},
			{acquire: "c", keys: []string{"x"}},
			{release: "a"},
			{release: "b"},
		}, "a b c"},
		{"waits for every key", []action{
			{acquire: "a", keys: []string{"x"}},
			{acquire: "b", keys: []string{"y"}},
			{acquire: "c", keys: []string{"x", "y"}},
			{release: "a"},
			{release: "b"},
		}, "a b c"},
		{"a later claim on a free key goes first", []action{
			{acquire: "a", keys: []string{"x"}},
			{acquire: "b", keys: []string{"x", "y"}},
			{acquire: "c", keys: []string{"z"}},
			{release: "a"},
		}, "a c b"},
		{"no overtaking behind a waiter", []action{
			{acquire: "a", keys: []string{"x"}},
			{acquire: "b", keys: []string{"x", "y"}},
			{acquire: "c", keys: []string{"y"}},
			{release: "a"},
			{release: "b"},
		}, "a b c"},
		{"readers together", []action{
			{acquire: "a", keys: []string{"x", "y"}, shared: true},
			{acquire: "b", keys: []string{"x"}, shared: true},
			{acquire: "c", keys: []string{"y", "z"}, shared: true},
		}, "a b c"},
		{"a writer waits for the readers", []action{
			{acquire: "a", keys: []string{"x"}, shared: true},
			{acquire: "b", keys: []string{"x"}, shared: true},
			{acquire: "w", keys: []string{"x"}},
			{release: "b"},
			{release: "a"},
		}, "a b w"},
		{"a reader does not overtake a waiting writer", []action{
			{acquire: "a", keys: []string{"x"}, shared: true},
			{acquire: "w", keys: []string{"x"}},
			{acquire: "b", keys: []string{"x"}, shared: true},
			{acquire: "c", keys: []string{"y"}, shared: true},
			{release: "a"},
			{release: "w"},
		}, "a c w b"},
		{"the readers after a writer go together", []action{
			{acquire: "w", keys: []string{"x", "y"}},
			{acquire: "a", keys: []string{"x"}, shared: true},
			{acquire: "b", keys: []string{"x", "y"}, shared: true},
			{acquire: "v", keys: []string{"y"}},
			{acquire: "c", keys: []string{"x"}, shared: true},
			{release: "w"},
		}, "w a c b"},
		{"grants that release at once, in order", []action{
			{acquire: "a", keys: []string{"x", "y"}},
			{acquire: "b", keys: []string{"x"}, now: true},
			{acquire: "c", keys: []string{"y"}, now: true},
			{acquire: "d", keys: []string{"x", "y"}, now: true},
			{release: "a"},
		}, "a b c d"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &shardState{}
			var log []string
			claims := map[string]*recorder{}
			for _, a := range tc.actions {
				if a.acquire != "" {
					r := &recorder{name: a.acquire, log: &log, release: a.now}
					r.req = lockReq{keys: a.keys, shared: a.shared, owner: r}
					claims[a.acquire] = r
					st.acquire(&r.req)
					continue
				}
				st.release(&claims[a.release].req)
			}
			if got := strings.Join(log, " "); got != tc.want {
				t.Fatalf("granted %q, want %q", got, tc.want)
			}
			// Release what is held, and what that grants: the table empties.
			for i := 0; i < len(log); i++ {
				r := claims[log[i]]
				if held := !r.release && !released(tc.actions, log[i]); held {
					st.release(&r.req)
				}
			}
			if len(st.locks) != 0 || len(st.granted) != 0 || st.granting {
				t.Fatalf("left: %d keys claimed, %d grants, granting %v", len(st.locks), len(st.granted), st.granting)
			}
		})
	}
}

// claimAction is a step of TestClaims.
type claimAction struct {
	acquire string // the name of a claim to queue, with keys
	keys    []string
	now     bool   // released as soon as granted
	shared  bool   // a reader's claim
	release string // or the name of a held claim to release
}

// released reports whether actions release the claim name.
func released(actions []claimAction, name string) bool {
	for _, a := range actions {
		if a.release == name {
			return true
		}
	}
	return false
}

// The keys a waiting unit claims: each once, in order.
func TestUnitKeys(t *testing.T) {
	args := func(s string) [][]byte {
		var a [][]byte
		for _, f := range strings.Fields(s) {
			a = append(a, []byte(f))
		}
		return a
	}
	for _, tc := range []struct {
		u    unit
		want string
	}{
		{unit{argv: args("GET k"), keys: keyFirst}, "[k]"},
		{unit{argv: args("MGET a b a c"), keys: keyAll}, "[a b c]"},
		{unit{argv: args("MSET a 1 b 2 a 3"), keys: keyPairs}, "[a b]"},
		{unit{argv: args("k v"), keys: keyPart}, "[k]"},
		{unit{argv: args("DBSIZE"), keys: keyNone}, "[]"},
	} {
		if got := fmt.Sprint(tc.u.keyStrings()); got != tc.want {
			t.Errorf("%q: keys %s, want %s", tc.u.argv, got, tc.want)
		}
	}
}
