package main

// The simulation's model of every command the server implements, on keys
// of every type that one client owns: each reply is checked against the
// model when it arrives (the model applies a request once its reply is
// checked), so a key's time to live is judged by when the request could
// have run: between its sending and its reply. A key whose expiry falls
// in that span may be there or not: both are tried, and the reply says
// which it was. A reply that both allow, leaving different states (SET
// KEEPTTL of a key that may have just expired), leaves the key unknown
// until a request that does not depend on it (DEL, SET) makes it known.

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strconv"
	"strings"
	"time"
)

// simEpoch is the Unix time, in milliseconds, at which the world's clock
// reads zero (the loops' epoch under the simulation).
var simEpoch = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC).UnixMilli()

const (
	errWrongType = "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n"
	errSyntaxR   = "-ERR syntax error\r\n"
	errNotIntR   = "-ERR value is not an integer or out of range\r\n"
	errRangeR    = "-ERR value is out of range, must be positive\r\n"
	errFloatR    = "-ERR value is not a valid float\r\n"
	errExecAbort = "-EXECABORT Transaction discarded because of previous errors.\r\n"
)

func errArityR(name string) string {
	return "-ERR wrong number of arguments for '" + name + "' command\r\n"
}

// xval is a key's value and time to live in the model.
type xval struct {
	kind    byte // 's' string, 'l' list, 'h' hash, 'S' set, 'z' sorted set
	s       string
	l       []string
	hf      []string // a hash's fields, in the order they were first set
	hm      map[string]string
	set     map[int]bool // sets hold integers: SMEMBERS answers them in order
	z       map[string]float64
	exp     bool          // a time to live: there before lo, gone from hi on (world time)
	lo, hi  time.Duration // (lo == hi: an absolute time, exact)
	unknown bool
}

func (v *xval) clone() *xval {
	c := *v
	c.l = slices.Clone(v.l)
	c.hf = slices.Clone(v.hf)
	if v.hm != nil {
		c.hm = make(map[string]string, len(v.hm))
		for k, x := range v.hm {
			c.hm[k] = x
		}
	}
	if v.set != nil {
		c.set = make(map[int]bool, len(v.set))
		for k := range v.set {
			c.set[k] = true
		}
	}
	if v.z != nil {
		c.z = make(map[string]float64, len(v.z))
		for k, x := range v.z {
			c.z[k] = x
		}
	}
	return &c
}

// key describes v for comparing two outcomes.
func (v *xval) key() string {
	if v == nil {
		return "nil"
	}
	return fmt.Sprintf("%c|%q|%q|%q|%v|%v|%v|%v|%v|%v", v.kind, v.s, v.l, v.hf, v.hm, v.set, v.z, v.exp, v.lo, v.hi)
}

// xmodel is one client's keys and connection state.
type xmodel struct {
	id     int
	keys   map[string]*xval
	name   string // CLIENT SETNAME
	hz     int    // CONFIG GET hz
	checks int    // replies checked against a model answer
}

func newXModel(id, hz int) *xmodel { return &xmodel{id: id, keys: map[string]*xval{}, hz: hz} }

// xtx is one request's view of the model: a copy of each key it reads,
// and whether each key whose expiry falls in the request's span is
// taken to be there.
type xtx struct {
	m         *xmodel
	sent, got time.Duration
	choice    map[string]bool
	amb       []string
	vals      map[string]*xval
	resets    map[string]bool // keys set whatever they held
	unknown   bool            // the request read a key the model does not know
}

func (t *xtx) get(k string) *xval {
	if v, ok := t.vals[k]; ok {
		return v
	}
	v := t.m.keys[k]
	if v != nil && v.unknown {
		t.unknown = true
		v = nil
	}
	if v != nil && v.exp {
		switch {
		case t.sent >= v.hi:
			v = nil
		case t.got < v.lo:
		default:
			alive, seen := t.choice[k]
			if !seen {
				t.amb = append(t.amb, k)
				alive = true
				t.choice[k] = true
			}
			if !alive {
				v = nil
			}
		}
	}
	if v != nil {
		v = v.clone()
	}
	t.vals[k] = v
	return v
}

func (t *xtx) put(k string, v *xval) {
	if v != nil && v.kind == 'l' && len(v.l) == 0 || v != nil && v.kind == 'h' && len(v.hm) == 0 ||
		v != nil && v.kind == 'S' && len(v.set) == 0 || v != nil && v.kind == 'z' && len(v.z) == 0 {
		v = nil // an empty container is no key
	}
	t.vals[k] = v
}

// reset sets k whatever it held.
func (t *xtx) reset(k string, v *xval) {
	t.vals[k] = v
	t.resets[k] = true
}

// typed returns k's value if it is of kind (nil if k is absent), and
// whether it holds another kind.
func (t *xtx) typed(k string, kind byte) (*xval, bool) {
	v := t.get(k)
	if v == nil {
		return nil, false
	}
	return v, v.kind != kind
}

// ttlAfter is a relative time to live of ms milliseconds set by this
// request: the server sets the deadline to its clock's millisecond plus
// ms, and the key is gone from that millisecond on; its clock read
// somewhere in the span of the request, the deadline is exactly known to
// within that span, in whole milliseconds.
func (t *xtx) ttlAfter(v *xval, ms int64) {
	v.exp = true
	v.lo = t.sent.Truncate(time.Millisecond) + time.Duration(ms)*time.Millisecond
	v.hi = t.got.Truncate(time.Millisecond) + time.Duration(ms)*time.Millisecond
}

// ttlAt is an absolute deadline, in Unix milliseconds: exact on the
// world's clock.
func ttlAt(v *xval, unixMS int64) {
	v.exp = true
	v.lo = time.Duration(unixMS-simEpoch) * time.Millisecond
	v.hi = v.lo
}

// xres is the model's answer: the reply, or a test of it; unsure are
// other replies the model cannot rule out, after which the keys the
// request touched are unknown.
type xres struct {
	want   string
	ok     func(string) bool
	unsure []string
	vague  bool // a reply that ok accepts leaves the keys touched unknown
}

func (r xres) match(reply string) bool {
	if r.ok != nil {
		return r.ok(reply)
	}
	return reply == r.want
}

func errR(msg string) xres { return xres{want: "-" + msg + "\r\n"} }
func want(s string) xres   { return xres{want: s} }

type xoutcome struct {
	vals   map[string]*xval
	resets map[string]bool
	unsure bool
}

// check returns the check of a request whose answer f gives.
func (m *xmodel) check(f func(t *xtx) xres) func(reply string, sent, got time.Duration) error {
	return func(reply string, sent, got time.Duration) error {
		var amb []string
		var outs []xoutcome
		var first xres
		for combo := 0; ; combo++ {
			t := &xtx{m: m, sent: sent, got: got, choice: map[string]bool{}, vals: map[string]*xval{}, resets: map[string]bool{}}
			for i, k := range amb {
				t.choice[k] = combo>>i&1 == 0
			}
			r := f(t)
			if combo == 0 {
				amb, first = t.amb, r
			}
			if t.unknown {
				// Any reply; the keys read become unknown.
				outs = []xoutcome{{vals: t.vals, resets: t.resets, unsure: true}}
				break
			}
			switch {
			case r.match(reply):
				outs = append(outs, xoutcome{vals: t.vals, resets: t.resets, unsure: r.vague})
			case slices.Contains(r.unsure, reply):
				outs = append(outs, xoutcome{vals: t.vals, resets: t.resets, unsure: true})
			}
			if combo+1 >= 1<<min(len(amb), 4) {
				break
			}
		}
		if len(outs) == 0 {
			w := short(first.want)
			if len(amb) > 0 {
				w += fmt.Sprintf(" (or as if %q had expired)", amb)
			}
			return fmt.Errorf("got %s, want %s", short(reply), w)
		}
		m.checks++
		m.commit(outs)
		return nil
	}
}

// commit applies the outcomes that the reply allowed: what they agree
// on, and unknown where they differ.
func (m *xmodel) commit(outs []xoutcome) {
	ks := map[string]bool{}
	for _, o := range outs {
		for k := range o.vals {
			ks[k] = true
		}
	}
	for k := range ks {
		var v *xval
		known := true
		for i, o := range outs {
			ov, had := o.vals[k]
			if !had {
				ov = m.keys[k]
			}
			if i == 0 {
				v = ov
			} else if ov.key() != v.key() {
				known = false
			}
			if o.unsure && !o.resets[k] {
				known = false
			}
		}
		switch {
		case !known:
			m.keys[k] = &xval{unknown: true}
		case v == nil:
			delete(m.keys, k)
		default:
			m.keys[k] = v
		}
	}
}

// xop is a request of the model: its arguments, the error a transaction
// refuses it with when it is queued ("" if it is queued), and its answer.
type xop struct {
	args []string
	qerr string
	f    func(t *xtx) xres
	then []xop // requests that must follow in the same pipeline
}

func (m *xmodel) ops(x xop) []op {
	o := op{req: cmd(x.args...), check: m.check(x.f)}
	if x.qerr != "" {
		o = op{req: cmd(x.args...), want: []string{x.qerr}}
	}
	ops := []op{o}
	for _, y := range x.then {
		ops = append(ops, m.ops(y)...)
	}
	return ops
}

// casing writes a command's name as the seed likes: commands are found in
// any case.
func casing(rng *rand.Rand, name string) string {
	switch rng.Intn(4) {
	case 0:
		return strings.ToLower(name)
	case 1:
		b := []byte(strings.ToLower(name))
		for i := range b {
			if rng.Intn(2) == 0 {
				b[i] -= 'a' - 'A'
			}
		}
		return string(b)
	}
	return name
}

func bulkArray(vs []string) string {
	s := array(len(vs))
	for _, v := range vs {
		s += bulk(v)
	}
	return s
}

func score(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	if f == float64(int64(f)) {
		return strconv.FormatInt(int64(f), 10)
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// gen draws a request of the model on the client's keys: small keys of
// every type (so that requests meet keys of the wrong type) and large
// containers, with TTL, options and errors; now is the world's time.
func (m *xmodel) gen(rng *rand.Rand, now time.Duration) xop {
	id := m.id
	small := func() string { return fmt.Sprintf("c%d:x%d", id, rng.Intn(8)) }
	big := func(kind string) string { return fmt.Sprintf("c%d:%s", id, kind) }
	val := func() string {
		if rng.Intn(6) == 0 {
			return strconv.Itoa(rng.Intn(200) - 100) // an integer: INCR takes it
		}
		b := make([]byte, 1+rng.Intn(20))
		for i := range b {
			b[i] = 'a' + byte(rng.Intn(26))
		}
		return string(b)
	}
	nowMS := simEpoch + int64(now/time.Millisecond)
	switch rng.Intn(40) {
	case 0, 1, 2: // SET with options
		return m.genSet(rng, small(), val(), nowMS)
	case 3, 4:
		k := small()
		return xop{args: []string{casing(rng, "GET"), k}, f: func(t *xtx) xres {
			v, wrong := t.typed(k, 's')
			switch {
			case wrong:
				return want(errWrongType)
			case v == nil:
				return want(nilBulk)
			}
			return want(bulk(v.s))
		}}
	case 5, 6: // INCR, DECR, INCRBY, DECRBY
		k := small()
		switch rng.Intn(20) {
		case 0: // the limits of a 64-bit integer
			v := []string{"9223372036854775807", "-9223372036854775808", "9223372036854775800"}[rng.Intn(3)]
			return xop{args: []string{"SET", k, v}, f: func(t *xtx) xres {
				t.reset(k, &xval{kind: 's', s: v})
				return want(simple("OK"))
			}}
		case 1:
			return xop{args: []string{"DECRBY", k, "-9223372036854775808"}, f: func(*xtx) xres {
				return errR("ERR decrement would overflow")
			}}
		}
		name := []string{"INCR", "DECR", "INCRBY", "DECRBY"}[rng.Intn(4)]
		by, arg := int64(1), ""
		args := []string{casing(rng, name), k}
		if name == "DECR" {
			by = -1
		}
		if strings.HasSuffix(name, "BY") {
			by = int64(rng.Intn(41) - 20)
			arg = strconv.FormatInt(by, 10)
			if rng.Intn(10) == 0 {
				arg = "1.5"
			}
			if name == "DECRBY" {
				by = -by
			}
			args = append(args, arg)
		}
		return xop{args: args, f: func(t *xtx) xres {
			if arg == "1.5" {
				return want(errNotIntR)
			}
			v, wrong := t.typed(k, 's')
			if wrong {
				return want(errWrongType)
			}
			var old int64
			if v != nil {
				n, err := strconv.ParseInt(v.s, 10, 64)
				if err != nil || strconv.FormatInt(n, 10) != v.s {
					return want(errNotIntR)
				}
				old = n
			} else {
				v = &xval{kind: 's'}
			}
			if by > 0 && old > math.MaxInt64-by || by < 0 && old < math.MinInt64-by {
				return errR("ERR increment or decrement would overflow")
			}
			v.s = strconv.FormatInt(old+by, 10) // the time to live stays
			t.put(k, v)
			return want(":" + v.s + "\r\n")
		}}
	case 7: // MGET
		ks := make([]string, 1+rng.Intn(4))
		for i := range ks {
			ks[i] = small()
		}
		return xop{args: append([]string{casing(rng, "MGET")}, ks...), f: func(t *xtx) xres {
			s := array(len(ks))
			for _, k := range ks {
				if v, wrong := t.typed(k, 's'); v != nil && !wrong {
					s += bulk(v.s)
				} else {
					s += nilBulk
				}
			}
			return want(s)
		}}
	case 8: // MSET, MSETNX; now and then with a value missing
		nx := rng.Intn(2) == 0
		name := "MSET"
		if nx {
			name = "MSETNX"
		}
		args := []string{casing(rng, name)}
		n := 1 + rng.Intn(3)
		for range n {
			args = append(args, small(), val())
		}
		odd := rng.Intn(10) == 0
		if odd {
			args = args[:len(args)-1]
		}
		if odd && len(args) < 3 {
			return xop{args: args, qerr: errArityR(strings.ToLower(name))}
		}
		return xop{args: args, f: func(t *xtx) xres {
			if odd {
				return want(errArityR(strings.ToLower(name)))
			}
			if nx {
				for i := 1; i < len(args); i += 2 {
					if t.get(args[i]) != nil {
						return want(integer(0))
					}
				}
			}
			for i := 1; i < len(args); i += 2 {
				if nx {
					t.put(args[i], &xval{kind: 's', s: args[i+1]})
				} else {
					t.reset(args[i], &xval{kind: 's', s: args[i+1]})
				}
			}
			if nx {
				return want(integer(1))
			}
			return want(simple("OK"))
		}}
	case 9, 10: // DEL, EXISTS
		del := rng.Intn(2) == 0
		name := "EXISTS"
		if del {
			name = "DEL"
		}
		ks := make([]string, 1+rng.Intn(3))
		for i := range ks {
			ks[i] = small()
			if rng.Intn(8) == 0 {
				ks[i] = big([]string{"L", "H", "S", "Z"}[rng.Intn(4)])
			}
		}
		return xop{args: append([]string{casing(rng, name)}, ks...), f: func(t *xtx) xres {
			n := 0
			for _, k := range ks {
				if t.get(k) != nil {
					n++
				}
				if del {
					t.reset(k, nil)
				}
			}
			return want(integer(n))
		}}
	case 11:
		k := small()
		return xop{args: []string{casing(rng, "TYPE"), k}, f: func(t *xtx) xres {
			v := t.get(k)
			if v == nil {
				return want(simple("none"))
			}
			return want(simple(map[byte]string{'s': "string", 'l': "list", 'h': "hash", 'S': "set", 'z': "zset"}[v.kind]))
		}}
	case 12, 13, 14:
		return m.genExpire(rng, small(), nowMS)
	case 15, 16: // TTL, PTTL
		k := small()
		ms := rng.Intn(2) == 0
		name := "TTL"
		if ms {
			name = "PTTL"
		}
		return xop{args: []string{casing(rng, name), k}, f: func(t *xtx) xres {
			v := t.get(k)
			switch {
			case v == nil:
				return want(integer(-2))
			case !v.exp:
				return want(integer(-1))
			}
			// left = deadline - floor(t), in ms, for t in [sent, got] and the
			// deadline in [lo, hi], whole milliseconds.
			lo := int64(v.lo/time.Millisecond) - int64(t.got/time.Millisecond)
			hi := int64(v.hi/time.Millisecond) - int64(t.sent/time.Millisecond)
			if !ms {
				lo, hi = (lo+500)/1000, (hi+500)/1000
			}
			return xres{want: fmt.Sprintf(":%d..%d", lo, hi), ok: func(r string) bool {
				n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(r, ":"), "\r\n"), 10, 64)
				return err == nil && r == integer(int(n)) && n >= max(lo, 0) && n <= hi
			}}
		}}
	case 17:
		k := small()
		return xop{args: []string{casing(rng, "PERSIST"), k}, f: func(t *xtx) xres {
			v := t.get(k)
			if v == nil || !v.exp {
				return want(integer(0))
			}
			v.exp = false
			t.put(k, v)
			return want(integer(1))
		}}
	case 18, 19, 20:
		k := small()
		if rng.Intn(2) == 0 {
			k = big("L")
		}
		return m.genList(rng, k, val)
	case 21, 22:
		k := small()
		if rng.Intn(2) == 0 {
			k = big("S")
		}
		return m.genSet2(rng, k)
	case 23, 24:
		k := small()
		if rng.Intn(2) == 0 {
			k = big("H")
		}
		return m.genHash(rng, k, val)
	case 25, 26, 27:
		k := small()
		if rng.Intn(2) == 0 {
			k = big("Z")
		}
		return m.genZset(rng, k)
	default:
		return m.genConn(rng)
	}
}

// genSet draws a SET with options, good and bad: a syntax error
// anywhere wins, then a bad time (of the last time option given).
func (m *xmodel) genSet(rng *rand.Rand, k, v string, nowMS int64) xop {
	args := []string{casing(rng, "SET"), k, v}
	var nx, xx, get, keep, syntax bool
	var exp, amountStr string // the time option (EX, PX, EXAT, PXAT) and its argument
	var amount int64
	for range rng.Intn(3) {
		switch rng.Intn(9) {
		case 0:
			args = append(args, "NX")
			syntax = syntax || xx
			nx = true
		case 1:
			args = append(args, "XX")
			syntax = syntax || nx
			xx = true
		case 2:
			args = append(args, "GET")
			get = true
		case 3:
			args = append(args, "KEEPTTL")
			syntax = syntax || exp != ""
			keep = true
		default:
			e := []string{"EX", "PX", "EXAT", "PXAT", "PX"}[rng.Intn(5)]
			syntax = syntax || keep || exp != "" && exp != e
			switch e {
			case "EX":
				amount = 1 + int64(rng.Intn(2))
			case "PX":
				amount = 1 + int64(rng.Intn(300))
			case "EXAT":
				amount = nowMS/1000 + int64(rng.Intn(3))
			case "PXAT":
				amount = nowMS + int64(rng.Intn(300)) - 20
			}
			a := strconv.FormatInt(amount, 10)
			switch rng.Intn(12) {
			case 0:
				a = "0"
			case 1:
				a = "soon"
			}
			args = append(args, e, a)
			exp, amountStr = e, a
		}
	}
	switch rng.Intn(30) {
	case 0:
		args = append(args, "FOREVER")
		syntax = true
	case 1:
		args = append(args, "PX") // its time missing
		syntax = true
	}
	return xop{args: args, f: func(t *xtx) xres {
		switch {
		case syntax:
			return want(errSyntaxR)
		case amountStr == "soon":
			return want(errNotIntR)
		case amountStr == "0":
			return errR("ERR invalid expire time in 'set' command")
		}
		old := t.get(k)
		var out string
		if get {
			switch {
			case old != nil && old.kind != 's':
				return want(errWrongType)
			case old != nil:
				out = bulk(old.s)
			default:
				out = nilBulk
			}
		}
		if nx && old != nil || xx && old == nil {
			if !get {
				out = nilBulk
			}
			return want(out)
		}
		nv := &xval{kind: 's', s: v}
		if keep && old != nil {
			nv.exp, nv.lo, nv.hi = old.exp, old.lo, old.hi
		}
		switch exp {
		case "EX":
			t.ttlAfter(nv, amount*1000)
		case "PX":
			t.ttlAfter(nv, amount)
		case "EXAT":
			ttlAt(nv, amount*1000)
		case "PXAT":
			ttlAt(nv, amount)
		}
		t.put(k, nv)
		if !get {
			out = simple("OK")
		}
		return want(out)
	}}
}

// genExpire draws EXPIRE, PEXPIRE, EXPIREAT or PEXPIREAT, with options.
func (m *xmodel) genExpire(rng *rand.Rand, k string, nowMS int64) xop {
	name := []string{"EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT"}[rng.Intn(4)]
	var amount int64
	switch name {
	case "EXPIRE":
		amount = int64(rng.Intn(3))
	case "PEXPIRE":
		amount = int64(rng.Intn(400)) - 20
	case "EXPIREAT":
		amount = nowMS/1000 + int64(rng.Intn(3)) - 1
	case "PEXPIREAT":
		// On a grid of 100 ms, so that a time is set again now and then.
		amount = nowMS/100*100 + 100*int64(rng.Intn(4)) - 100
	}
	if v := m.keys[k]; v != nil && v.exp && v.lo == v.hi && rng.Intn(3) == 0 {
		// The time the key has already (as far as the model knows now).
		name = "PEXPIREAT"
		amount = simEpoch + int64(v.lo/time.Millisecond)
	}
	a := strconv.FormatInt(amount, 10)
	if rng.Intn(20) == 0 {
		a = "later"
	}
	args := []string{casing(rng, name), k, a}
	flags := map[string]bool{}
	bad := ""
	for range rng.Intn(3) {
		o := []string{"NX", "XX", "GT", "LT", "NX", "XX", "GT", "LT", "SOMETIME"}[rng.Intn(9)]
		args = append(args, o)
		if o == "SOMETIME" && bad == "" {
			bad = "ERR Unsupported option SOMETIME"
		}
		flags[o] = true
	}
	switch {
	case bad != "":
	case flags["NX"] && (flags["XX"] || flags["GT"] || flags["LT"]):
		bad = "ERR NX and XX, GT or LT options at the same time are not compatible"
	case flags["GT"] && flags["LT"]:
		bad = "ERR GT and LT options at the same time are not compatible"
	case a == "later":
		bad = "ERR value is not an integer or out of range"
	}
	unit := int64(1)
	if name == "EXPIRE" || name == "EXPIREAT" {
		unit = 1000
	}
	relative := !strings.HasSuffix(name, "AT")
	return xop{args: args, f: func(t *xtx) xres {
		if bad != "" {
			return errR(bad)
		}
		v := t.get(k)
		if v == nil {
			return want(integer(0))
		}
		nv := v.clone()
		ms := amount * unit
		switch {
		case relative && ms <= 0:
			nv = nil // a time passed: the key goes
		case relative:
			t.ttlAfter(nv, ms)
		default:
			ttlAt(nv, ms)
		}
		// GT and LT compare the new time with the current one; when their
		// spans overlap, either answer may come.
		var newLo, newHi time.Duration
		if nv != nil {
			newLo, newHi = nv.lo, nv.hi
		} else {
			newLo, newHi = -1, -1
		}
		later, earlier, either := false, false, false
		switch {
		case v.exp && newLo == newHi && v.lo == v.hi: // both exact
			later, earlier = newLo > v.lo, newLo < v.lo
		case v.exp:
			later = newLo > v.hi
			earlier = newHi < v.lo
			either = !later && !earlier
		}
		sets := true
		switch {
		case flags["NX"] && v.exp, flags["XX"] && !v.exp:
			sets = false
		case flags["GT"] && (!v.exp || !later):
			sets = false
		case flags["LT"] && v.exp && !earlier:
			sets = false
		}
		if (flags["GT"] || flags["LT"]) && v.exp && either {
			if sets {
				t.put(k, nv)
				return xres{want: integer(1), unsure: []string{integer(0)}}
			}
			t.put(k, nv)
			return xres{want: integer(0), unsure: []string{integer(1)}}
		}
		if !sets {
			return want(integer(0))
		}
		t.put(k, nv)
		return want(integer(1))
	}}
}

// genList draws a list request; on the large list, pushes of many.
func (m *xmodel) genList(rng *rand.Rand, k string, val func() string) xop {
	bigKey := strings.HasSuffix(k, ":L")
	switch r := rng.Intn(10); r {
	case 0, 1, 2:
		name := []string{"LPUSH", "RPUSH"}[rng.Intn(2)]
		n := 1 + rng.Intn(4)
		if bigKey {
			n = 1 + rng.Intn(150)
		}
		args := []string{casing(rng, name), k}
		for range n {
			args = append(args, val())
		}
		vs := args[2:]
		return xop{args: args, f: func(t *xtx) xres {
			v, wrong := t.typed(k, 'l')
			if wrong {
				return want(errWrongType)
			}
			if v == nil {
				v = &xval{kind: 'l'}
			}
			for _, x := range vs {
				if name == "LPUSH" {
					v.l = append([]string{x}, v.l...)
				} else {
					v.l = append(v.l, x)
				}
			}
			t.put(k, v)
			return want(integer(len(v.l)))
		}}
	case 3, 4:
		name := []string{"LPOP", "RPOP"}[rng.Intn(2)]
		args := []string{casing(rng, name), k}
		count, has := 1, false
		switch rng.Intn(6) {
		case 0, 1:
			count, has = rng.Intn(12), true
			if bigKey {
				count = rng.Intn(100)
			}
			args = append(args, strconv.Itoa(count))
		case 2:
			if rng.Intn(3) == 0 {
				args = append(args, "-1")
				return xop{args: args, f: func(t *xtx) xres { return want(errRangeR) }}
			}
			if rng.Intn(2) == 0 {
				args = append(args, "1", "2")
				return xop{args: args, f: func(t *xtx) xres { return want(errArityR(strings.ToLower(name))) }}
			}
		}
		return xop{args: args, f: func(t *xtx) xres {
			v, wrong := t.typed(k, 'l')
			switch {
			case wrong:
				return want(errWrongType)
			case v == nil && has:
				return want("*-1\r\n")
			case v == nil:
				return want(nilBulk)
			}
			n := min(count, len(v.l))
			var got []string
			if name == "LPOP" {
				got, v.l = slices.Clone(v.l[:n]), v.l[n:]
			} else {
				for range n {
					got = append(got, v.l[len(v.l)-1])
					v.l = v.l[:len(v.l)-1]
				}
			}
			t.put(k, v)
			if has {
				return want(bulkArray(got))
			}
			return want(bulk(got[0]))
		}}
	case 5, 6, 7:
		a, b := rng.Intn(40)-20, rng.Intn(40)-20
		if bigKey {
			a, b = rng.Intn(600)-300, rng.Intn(600)-300
		}
		if rng.Intn(4) == 0 {
			a, b = 0, -1
		}
		sa := strconv.Itoa(a)
		if rng.Intn(25) == 0 {
			sa = "first"
		}
		return xop{args: []string{casing(rng, "LRANGE"), k, sa, strconv.Itoa(b)}, f: func(t *xtx) xres {
			if sa == "first" {
				return want(errNotIntR)
			}
			v, wrong := t.typed(k, 'l')
			switch {
			case wrong:
				return want(errWrongType)
			case v == nil:
				return want(array(0))
			}
			n := len(v.l)
			s, e := a, b
			if s < 0 {
				s += n
			}
			if e < 0 {
				e += n
			}
			s = max(s, 0)
			if s > e || s >= n {
				return want(array(0))
			}
			e = min(e, n-1)
			return want(bulkArray(v.l[s : e+1]))
		}}
	default:
		return card(rng, "LLEN", k, 'l', func(v *xval) int { return len(v.l) })
	}
}

// genSet2 draws a set request; members are integers (under 512 of them,
// as an intset holds, SMEMBERS answers them in order).
func (m *xmodel) genSet2(rng *rand.Rand, k string) xop {
	bigKey := strings.HasSuffix(k, ":S")
	span := 20
	if bigKey {
		span = 400
	}
	members := func(n int) []string {
		var ms []string
		for range n {
			ms = append(ms, strconv.Itoa(rng.Intn(span)))
		}
		return ms
	}
	switch rng.Intn(10) {
	case 0, 1, 2, 3:
		name := []string{"SADD", "SREM", "SADD"}[rng.Intn(3)]
		n := 1 + rng.Intn(4)
		if bigKey {
			n = 1 + rng.Intn(100)
		}
		ms := members(n)
		return xop{args: append([]string{casing(rng, name), k}, ms...), f: func(t *xtx) xres {
			v, wrong := t.typed(k, 'S')
			if wrong {
				return want(errWrongType)
			}
			if v == nil {
				v = &xval{kind: 'S', set: map[int]bool{}}
			}
			n := 0
			for _, s := range ms {
				x, _ := strconv.Atoi(s)
				if v.set[x] == (name == "SREM") {
					n++
				}
				if name == "SADD" {
					v.set[x] = true
				} else {
					delete(v.set, x)
				}
			}
			t.put(k, v)
			return want(integer(n))
		}}
	case 4:
		return card(rng, "SCARD", k, 'S', func(v *xval) int { return len(v.set) })
	case 5, 6:
		x := rng.Intn(span)
		return xop{args: []string{casing(rng, "SISMEMBER"), k, strconv.Itoa(x)}, f: func(t *xtx) xres {
			v, wrong := t.typed(k, 'S')
			if wrong {
				return want(errWrongType)
			}
			if v != nil && v.set[x] {
				return want(integer(1))
			}
			return want(integer(0))
		}}
	case 7, 8:
		return xop{args: []string{casing(rng, "SMEMBERS"), k}, f: func(t *xtx) xres {
			v, wrong := t.typed(k, 'S')
			if wrong {
				return want(errWrongType)
			}
			var xs []int
			if v != nil {
				for x := range v.set {
					xs = append(xs, x)
				}
			}
			slices.Sort(xs)
			s := array(len(xs))
			for _, x := range xs {
				s += bulk(strconv.Itoa(x))
			}
			return want(s)
		}}
	default:
		// SPOP picks at random (not from the seed): its reply is known only
		// for a set of one member, or a count of 0. So a key of its own is
		// deleted, given one member and popped, in one pipeline.
		p := fmt.Sprintf("c%d:P", m.id)
		x := strconv.Itoa(rng.Intn(span))
		args := []string{casing(rng, "SPOP"), p}
		count := []string{"", "0", "1", "5", "-3"}[rng.Intn(5)]
		if count != "" {
			args = append(args, count)
		}
		return xop{args: []string{"DEL", p}, f: func(t *xtx) xres {
			n := 0
			if t.get(p) != nil {
				n = 1
			}
			t.reset(p, nil)
			return want(integer(n))
		}, then: []xop{
			{args: []string{"SADD", p, x}, f: func(t *xtx) xres {
				if t.get(p) != nil {
					return want(integer(0)) // unknown: any reply
				}
				n, _ := strconv.Atoi(x)
				t.put(p, &xval{kind: 'S', set: map[int]bool{n: true}})
				return want(integer(1))
			}},
			{args: args, f: func(t *xtx) xres {
				v, _ := t.typed(p, 'S')
				switch {
				case count == "-3":
					return want(errRangeR)
				case v == nil && count == "":
					return want(nilBulk)
				case v == nil || count == "0":
					return want(array(0))
				}
				t.put(p, nil)
				if count == "" {
					return want(bulk(x))
				}
				return want(array(1) + bulk(x))
			}},
		}}
	}
}

// genHash draws a hash request.
func (m *xmodel) genHash(rng *rand.Rand, k string, val func() string) xop {
	bigKey := strings.HasSuffix(k, ":H")
	span := 6
	if bigKey {
		span = 300
	}
	field := func() string { return "f" + strconv.Itoa(rng.Intn(span)) }
	switch rng.Intn(8) {
	case 0, 1, 2:
		n := 1 + rng.Intn(3)
		if bigKey {
			n = 1 + rng.Intn(60)
		}
		args := []string{casing(rng, "HSET"), k}
		for range n {
			args = append(args, field(), val())
		}
		odd := rng.Intn(15) == 0
		if odd {
			args = args[:len(args)-1]
			if len(args) < 4 {
				return xop{args: args, qerr: errArityR("hset")}
			}
		}
		return xop{args: args, f: func(t *xtx) xres {
			if odd {
				return want(errArityR("hset"))
			}
			v, wrong := t.typed(k, 'h')
			if wrong {
				return want(errWrongType)
			}
			if v == nil {
				v = &xval{kind: 'h', hm: map[string]string{}}
			}
			added := 0
			for i := 2; i < len(args); i += 2 {
				if _, ok := v.hm[args[i]]; !ok {
					added++
					v.hf = append(v.hf, args[i])
				}
				v.hm[args[i]] = args[i+1]
			}
			t.put(k, v)
			return want(integer(added))
		}}
	case 3, 4:
		f := field()
		return xop{args: []string{casing(rng, "HGET"), k, f}, f: func(t *xtx) xres {
			v, wrong := t.typed(k, 'h')
			if wrong {
				return want(errWrongType)
			}
			if x, ok := v.hget(f); ok {
				return want(bulk(x))
			}
			return want(nilBulk)
		}}
	case 5:
		return card(rng, "HLEN", k, 'h', func(v *xval) int { return len(v.hm) })
	default:
		return xop{args: []string{casing(rng, "HGETALL"), k}, f: func(t *xtx) xres {
			v, wrong := t.typed(k, 'h')
			if wrong {
				return want(errWrongType)
			}
			if v == nil {
				return want(array(0))
			}
			s := array(2 * len(v.hf))
			for _, f := range v.hf {
				s += bulk(f) + bulk(v.hm[f])
			}
			return want(s)
		}}
	}
}

// card is a count of k's members (LLEN, SCARD, HLEN, ZCARD): 0 when k is
// absent.
func card(rng *rand.Rand, name, k string, kind byte, n func(v *xval) int) xop {
	return xop{args: []string{casing(rng, name), k}, f: func(t *xtx) xres {
		v, wrong := t.typed(k, kind)
		switch {
		case wrong:
			return want(errWrongType)
		case v == nil:
			return want(integer(0))
		}
		return want(integer(n(v)))
	}}
}

func (v *xval) hget(f string) (string, bool) {
	if v == nil {
		return "", false
	}
	x, ok := v.hm[f]
	return x, ok
}

// zsorted returns the members in order: score, then member.
func (v *xval) zsorted() []string {
	var ms []string
	for m := range v.z {
		ms = append(ms, m)
	}
	slices.SortFunc(ms, func(a, b string) int {
		if v.z[a] != v.z[b] {
			if v.z[a] < v.z[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	return ms
}

// genZset draws a sorted set request: ZADD, ZCARD, ZPOPMIN and ZRANGE by
// rank, score or member, reversed, limited, with scores, and their errors.
func (m *xmodel) genZset(rng *rand.Rand, k string) xop {
	bigKey := strings.HasSuffix(k, ":Z")
	span := 10
	if bigKey {
		span = 300
	}
	member := func() string { return fmt.Sprintf("m%03d", rng.Intn(span)) }
	sc := func() float64 { return float64(rng.Intn(2*span)-span/2) / 2 }
	switch rng.Intn(12) {
	case 0, 1, 2, 3:
		n := 1 + rng.Intn(3)
		if bigKey {
			n = 1 + rng.Intn(80)
		}
		args := []string{casing(rng, "ZADD"), k}
		var scores []float64
		for range n {
			f := sc()
			scores = append(scores, f)
			args = append(args, score(f), member())
		}
		fault := ""
		switch rng.Intn(20) {
		case 0:
			args = args[:len(args)-1]
			fault = errSyntaxR
		case 1:
			// Scores as strtod reads them: hexadecimal, infinities, a
			// sign; an underflow, an underscore or a word are no float.
			sp := []struct {
				s  string
				f  float64
				ok bool
			}{{"high", 0, false}, {"1e-400", 0, false}, {"1_0", 0, false}, {"0x10", 16, true},
				{"inf", math.Inf(1), true}, {"-inf", math.Inf(-1), true}, {"+5", 5, true}, {"2.5e1", 25, true}}[rng.Intn(8)]
			args[2] = sp.s
			scores[0] = sp.f
			if !sp.ok {
				fault = errFloatR
			}
		}
		if fault == errSyntaxR && len(args) < 4 {
			return xop{args: args, qerr: errArityR("zadd")}
		}
		return xop{args: args, f: func(t *xtx) xres {
			if fault != "" {
				return want(fault)
			}
			v, wrong := t.typed(k, 'z')
			if wrong {
				return want(errWrongType)
			}
			if v == nil {
				v = &xval{kind: 'z', z: map[string]float64{}}
			}
			added := 0
			for i, f := range scores {
				mm := args[3+2*i]
				if _, ok := v.z[mm]; !ok {
					added++
				}
				v.z[mm] = f
			}
			t.put(k, v)
			return want(integer(added))
		}}
	case 4:
		return card(rng, "ZCARD", k, 'z', func(v *xval) int { return len(v.z) })
	case 5:
		args := []string{casing(rng, "ZPOPMIN"), k}
		count := 1
		if rng.Intn(2) == 0 {
			count = rng.Intn(6)
			if bigKey {
				count = rng.Intn(50)
			}
			args = append(args, strconv.Itoa(count))
		}
		return xop{args: args, f: func(t *xtx) xres {
			v, wrong := t.typed(k, 'z')
			switch {
			case wrong:
				return want(errWrongType)
			case v == nil:
				return want(array(0))
			}
			ms := v.zsorted()
			n := min(count, len(ms))
			s := array(2 * n)
			for _, mm := range ms[:n] {
				s += bulk(mm) + bulk(score(v.z[mm]))
				delete(v.z, mm)
			}
			t.put(k, v)
			return want(s)
		}}
	default:
		return m.genZRange(rng, k, span, member, sc)
	}
}

func (m *xmodel) genZRange(rng *rand.Rand, k string, span int, member func() string, sc func() float64) xop {
	kind := []string{"", "BYSCORE", "BYLEX"}[rng.Intn(3)]
	rev := rng.Intn(3) == 0
	withScores := rng.Intn(2) == 0 && kind != "BYLEX"
	limit := kind != "" && rng.Intn(2) == 0
	offset, count := rng.Intn(10), rng.Intn(12)-1
	var lo, hi string
	var a, b int
	var sa, sb float64
	var la, lb string
	var aExc, bExc bool
	switch kind {
	case "":
		a, b = rng.Intn(2*span)-span, rng.Intn(2*span)-span
		if rng.Intn(3) == 0 {
			a, b = 0, -1
		}
		lo, hi = strconv.Itoa(a), strconv.Itoa(b)
	case "BYSCORE":
		sa, sb = sc(), sc()
		if sa > sb {
			sa, sb = sb, sa
		}
		aExc, bExc = rng.Intn(3) == 0, rng.Intn(3) == 0
		lo, hi = score(sa), score(sb)
		if aExc {
			lo = "(" + lo
		}
		if bExc {
			hi = "(" + hi
		}
		if rng.Intn(6) == 0 {
			lo, sa, aExc = "-inf", math.Inf(-1), false
		}
		if rng.Intn(6) == 0 {
			hi, sb, bExc = "+inf", math.Inf(1), false
		}
	case "BYLEX":
		la, lb = member(), member()
		if la > lb {
			la, lb = lb, la
		}
		aExc, bExc = rng.Intn(2) == 0, rng.Intn(2) == 0
		lo, hi = "["+la, "["+lb
		if aExc {
			lo = "(" + la
		}
		if bExc {
			hi = "(" + lb
		}
		if rng.Intn(5) == 0 {
			lo, la = "-", ""
			aExc = false
		}
	}
	args := []string{casing(rng, "ZRANGE"), k, lo, hi}
	if rev && kind != "" {
		args[2], args[3] = hi, lo // given as max, min
	}
	if kind != "" {
		args = append(args, kind)
	}
	if rev {
		args = append(args, "REV")
	}
	if limit {
		args = append(args, "LIMIT", strconv.Itoa(offset), strconv.Itoa(count))
	}
	if withScores {
		args = append(args, "WITHSCORES")
	}
	fault := ""
	switch rng.Intn(25) {
	case 0:
		args = append(args, "LIMIT", "0", "1")
		if kind == "" {
			fault = "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n"
		} else {
			limit, offset, count = true, 0, 1
		}
	case 1:
		if kind == "BYLEX" {
			args = append(args, "WITHSCORES")
			fault = "-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n"
		}
	case 2:
		args = append(args, "SIDEWAYS")
		fault = errSyntaxR
	}
	if !limit {
		count = -1
		offset = 0
	}
	return xop{args: args, f: func(t *xtx) xres {
		if fault != "" {
			return want(fault)
		}
		v, wrong := t.typed(k, 'z')
		if wrong {
			return want(errWrongType)
		}
		if v == nil {
			return want(array(0))
		}
		ms := v.zsorted()
		if rev {
			slices.Reverse(ms)
		}
		var picked []string
		switch kind {
		case "":
			n := len(ms)
			s, e := a, b
			if s < 0 {
				s += n
			}
			if e < 0 {
				e += n
			}
			s = max(s, 0)
			if s <= e && s < n {
				picked = ms[s : min(e, n-1)+1]
			}
		default:
			in := func(mm string) bool {
				if kind == "BYSCORE" {
					f := v.z[mm]
					return (f > sa || !aExc && f == sa) && (f < sb || !bExc && f == sb)
				}
				okLo := mm > la || !aExc && mm == la // "-": la is "", below every member
				okHi := mm < lb || !bExc && mm == lb
				return okLo && okHi
			}
			off, lim := offset, count
			for _, mm := range ms {
				if !in(mm) {
					continue
				}
				if off > 0 {
					off--
					continue
				}
				if lim == 0 {
					break
				}
				lim--
				picked = append(picked, mm)
			}
		}
		if withScores {
			s := array(2 * len(picked))
			for _, mm := range picked {
				s += bulk(mm) + bulk(score(v.z[mm]))
			}
			return want(s)
		}
		return want(bulkArray(picked))
	}}
}

// genConn draws a request of the connection and the server: PING, ECHO,
// SELECT, CLIENT, CONFIG GET, COMMAND COUNT, unknown commands and wrong
// arities (which a transaction refuses when they are queued).
func (m *xmodel) genConn(rng *rand.Rand) xop {
	prefix := func(p string) xres {
		return xres{want: p + "...", ok: func(r string) bool { return strings.HasPrefix(r, p) }}
	}
	switch rng.Intn(22) {
	case 12:
		section := []string{"keyspace", "clients", "stats"}[rng.Intn(3)]
		return xop{args: []string{casing(rng, "INFO"), section}, f: func(*xtx) xres {
			return xres{want: "INFO " + section, ok: func(r string) bool { return infoOK(r, section) }}
		}}
	case 13:
		return xop{args: []string{"COMMAND", "INFO", "get", "nosuch"}, f: func(*xtx) xres {
			return prefix("*2\r\n*10\r\n$3\r\nget\r\n:2\r\n*2\r\n+readonly\r\n+fast\r\n:1\r\n:1\r\n:1\r\n")
		}}
	case 14:
		return xop{args: []string{"COMMAND", "DOCS", "ping"}, f: func(*xtx) xres {
			return want(array(2) + bulk("ping") + array(6) + bulk("summary") + bulk("Returns the server's liveliness response.") +
				bulk("since") + bulk("1.0.0") + bulk("group") + bulk("connection"))
		}}
	case 15:
		return xop{args: []string{"COMMAND"}, f: func(*xtx) xres {
			return prefix(array(len(commandList)) + "*10\r\n$4\r\nping\r\n:-1\r\n")
		}}
	case 16:
		if rng.Intn(10) == 0 {
			return xop{args: []string{"MEMORY", "PURGE"}, f: func(*xtx) xres { return want(simple("OK")) }}
		}
		return xop{args: []string{"MEMORY", "FROB"}, qerr: "-ERR unknown subcommand 'FROB'. Try MEMORY HELP.\r\n"}
	case 17:
		return xop{args: []string{"BGREWRITEAOF"}, f: func(*xtx) xres { return prefix("-ERR BGREWRITEAOF is not supported") }}
	case 18:
		return xop{args: []string{"CONFIG", "GET", "maxmemory", "databases", "nosuch"}, f: func(*xtx) xres {
			return want(array(4) + bulk("maxmemory") + bulk("0") + bulk("databases") + bulk("1"))
		}}
	case 19:
		return xop{args: []string{"PING", "a", "b"}, f: func(*xtx) xres { return want(errArityR("ping")) }}
	case 20:
		return xop{args: []string{"CONFIG", "SET", "hz", "5"}, qerr: "-ERR unknown subcommand 'SET'. Try CONFIG HELP.\r\n"}
	case 0:
		return xop{args: []string{casing(rng, "PING")}, f: func(*xtx) xres { return want(simple("PONG")) }}
	case 1:
		return xop{args: []string{casing(rng, "PING"), "hello"}, f: func(*xtx) xres { return want(bulk("hello")) }}
	case 2:
		return xop{args: []string{casing(rng, "ECHO"), "echo\r\nme"}, f: func(*xtx) xres { return want(bulk("echo\r\nme")) }}
	case 3:
		db := []string{"0", "1", "zero"}[rng.Intn(3)]
		return xop{args: []string{casing(rng, "SELECT"), db}, f: func(*xtx) xres {
			switch db {
			case "0":
				return want(simple("OK"))
			case "1":
				return errR("ERR DB index is out of range")
			}
			return want(errNotIntR)
		}}
	case 4:
		name := fmt.Sprint("client-", rng.Intn(100))
		if rng.Intn(4) == 0 {
			name = "has space"
		}
		return xop{args: []string{"CLIENT", casing(rng, "SETNAME"), name}, f: func(t *xtx) xres {
			if name == "has space" {
				return errR("ERR Client names cannot contain spaces, newlines or special characters.")
			}
			t.m.name = name
			return want(simple("OK"))
		}}
	case 5:
		return xop{args: []string{"CLIENT", casing(rng, "GETNAME")}, f: func(t *xtx) xres {
			if t.m.name == "" {
				return want(nilBulk)
			}
			return want(bulk(t.m.name))
		}}
	case 6:
		return xop{args: []string{"CLIENT", "ID"}, f: func(*xtx) xres {
			return xres{want: "a positive integer", ok: func(r string) bool {
				n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(r, ":"), "\r\n"))
				return err == nil && n > 0 && r == integer(n)
			}}
		}}
	case 7:
		return xop{args: []string{"CONFIG", "GET", "hz"}, f: func(t *xtx) xres {
			return want(array(2) + bulk("hz") + bulk(strconv.Itoa(t.m.hz)))
		}}
	case 8:
		return xop{args: []string{"COMMAND", "COUNT"}, f: func(*xtx) xres { return want(integer(len(commandList))) }}
	case 9:
		return xop{args: []string{"FROBNICATE", "a", "b"}, qerr: "-ERR unknown command 'FROBNICATE', with args beginning with: 'a' 'b' \r\n"}
	case 10:
		name := []string{"GET", "LLEN", "HGET", "ZCARD", "ECHO"}[rng.Intn(5)]
		return xop{args: []string{name}, qerr: errArityR(strings.ToLower(name))}
	default:
		return xop{args: []string{"CLIENT", "FROB"}, qerr: "-ERR unknown subcommand 'FROB'. Try CLIENT HELP.\r\n"}
	}
}

// multi draws a transaction of the model's requests: each queued (or
// refused: then EXEC aborts), their replies in EXEC's, in order.
func (m *xmodel) multi(rng *rand.Rand, now time.Duration) []op {
	var ops []op
	switch rng.Intn(8) {
	case 0:
		ops = append(ops, op{req: cmd("EXEC"), want: []string{"-ERR EXEC without MULTI\r\n"}})
	case 1:
		ops = append(ops, op{req: cmd("DISCARD"), want: []string{"-ERR DISCARD without MULTI\r\n"}})
	case 2:
		ops = append(ops, op{req: cmd("UNWATCH"), want: []string{simple("OK")}})
	}
	ops = append(ops, op{req: cmd("MULTI"), want: []string{simple("OK")}})
	var fs []func(t *xtx) xres
	var queued [][]string
	abort := false
	for range 1 + rng.Intn(5) {
		switch rng.Intn(12) {
		case 0: // refused, the transaction goes on
			ops = append(ops, op{req: cmd("MULTI"), want: []string{"-ERR MULTI calls can not be nested\r\n"}})
			continue
		case 1:
			ops = append(ops, op{req: cmd("WATCH", fmt.Sprintf("c%d:x0", m.id)), want: []string{"-ERR WATCH inside MULTI is not allowed\r\n"}})
			continue
		case 2:
			ops = append(ops, op{req: cmd("UNWATCH"), want: []string{simple("QUEUED")}})
			fs = append(fs, func(*xtx) xres { return want(simple("OK")) })
			queued = append(queued, []string{"UNWATCH"})
			continue
		case 3:
			if rng.Intn(3) == 0 {
				ops = append(ops, op{req: cmd("DISCARD", "x"), want: []string{errArityR("discard")}})
				abort = true
				continue
			}
		}
		x := m.gen(rng, now)
		if x.qerr != "" {
			if rng.Intn(3) > 0 {
				continue // mostly transactions that run
			}
			abort = true
			ops = append(ops, op{req: cmd(x.args...), want: []string{x.qerr}})
			continue
		}
		if strings.EqualFold(x.args[0], "CLIENT") || x.then != nil {
			continue
		}
		ops = append(ops, op{req: cmd(x.args...), want: []string{simple("QUEUED")}})
		fs = append(fs, x.f)
		queued = append(queued, x.args)
	}
	if abort {
		return append(ops, op{req: cmd("EXEC"), want: []string{errExecAbort}})
	}
	if rng.Intn(12) == 0 {
		return append(ops, op{req: cmd("EXEC", "now"), want: []string{"-EXECABORT Transaction discarded because of: wrong number of arguments for 'exec' command\r\n"}})
	}
	if rng.Intn(8) == 0 {
		return append(ops, op{req: cmd("DISCARD"), want: []string{simple("OK")}})
	}
	return append(ops, op{req: cmd("EXEC"), check: func(reply string, sent, got time.Duration) error {
		if !strings.HasPrefix(reply, array(len(fs))) {
			return fmt.Errorf("EXEC of %d: got %q", len(fs), reply)
		}
		rest := reply[len(array(len(fs))):]
		for i, f := range fs {
			k, ok := replyLen([]byte(rest))
			if !ok {
				return fmt.Errorf("EXEC: reply %d of %d missing in %q", i, len(fs), reply)
			}
			if err := m.check(f)(rest[:k], sent, got); err != nil {
				return fmt.Errorf("EXEC reply %d (%q, of %q): %w", i, queued[i], queued, err)
			}
			rest = rest[k:]
		}
		if rest != "" {
			return fmt.Errorf("EXEC: %q after %d replies", rest, len(fs))
		}
		return nil
	}})
}

// infoOK checks INFO's reply of one section: a bulk string with its
// header and its lines, each a field and a number.
func infoOK(r, section string) bool {
	head, body, ok := strings.Cut(r, "\r\n")
	if !ok || !strings.HasPrefix(head, "$") {
		return false
	}
	n, err := strconv.Atoi(head[1:])
	if err != nil || len(body) != n+2 || !strings.HasSuffix(body, "\r\n") {
		return false
	}
	lines := strings.Split(strings.TrimSuffix(body[:n], "\r\n"), "\r\n")
	if lines[0] != "# "+strings.ToUpper(section[:1])+section[1:] {
		return false
	}
	for _, l := range lines[1:] {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return false
		}
		switch section {
		case "keyspace":
			var keys, expires int
			if _, err := fmt.Sscanf(v, "keys=%d,expires=%d,avg_ttl=0", &keys, &expires); err != nil || k != "db0" || keys < 1 || expires > keys {
				return false
			}
		default:
			if x, err := strconv.Atoi(v); err != nil || x < 0 {
				return false
			}
		}
	}
	return true
}
