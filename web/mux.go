package web

// The router: patterns as net/http's ServeMux reads them (Go 1.22), and
// the same precedence. The routes form a tree per host and method whose
// nodes hold, for one path segment, the literal children, the child for a
// single wildcard and the one for a multi wildcard; a match tries them in
// that order and backtracks, so the most specific pattern wins.

import (
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
)

// Mux routes requests by method, host and path to handlers, with the
// patterns of net/http's ServeMux:
//
//	[METHOD ][HOST]/[PATH]
//
// A METHOD pattern matches only that method (GET matches HEAD too); a
// pattern without one matches every method. A path segment may be a
// wildcard, {name}, which matches one segment, or, last, {name...}, which
// matches the rest of the path; a pattern that ends in a slash matches
// every path below it, and one that ends in {$} only the path with that
// final slash. The most specific pattern wins: a literal segment before a
// wildcard, a wildcard before a multi wildcard, a pattern with a method
// before one without. Request.PathValue returns what a wildcard matched.
//
// As ServeMux does, Mux answers a path that is not clean ("/a/../b",
// "//x") and one that lacks the trailing slash of a subtree pattern with a
// redirect (307), a path that matches only for other methods with 405 and
// an Allow header, and the rest with 404.
//
// Register every route before serving: a Mux is read by the loops that
// serve with it, without a lock. The zero Mux has no routes and is ready.
type Mux struct {
	trees map[string]*methodTree // by host; "" for patterns without one
	pats  []string
}

type methodTree struct {
	methods map[string]*node // by method; "" for patterns without one
}

type node struct {
	pat   *pattern // the route ending here
	lits  map[string]*node
	wild  *node
	multi *node
}

type pattern struct {
	str     string
	method  string
	host    string
	names   []string // of the wildcards, in order; "" for a trailing slash
	h       Handler
	trailer bool // ends with an anonymous multi wildcard (a slash)
	multi   bool // ends with a multi wildcard, named or not
	nsegs   int
}

// exact reports whether p matched path exactly, as ServeMux defines it:
// not with a multi wildcard that took a non-empty rest.
func (p *pattern) exact(path string) bool {
	if !p.multi {
		return true
	}
	if path == "" || path[len(path)-1] != '/' {
		return false
	}
	return p.nsegs == strings.Count(path, "/")
}

// NewMux returns an empty Mux.
func NewMux() *Mux { return new(Mux) }

// HandleFunc registers f for pattern.
func (m *Mux) HandleFunc(pattern string, f func(w *ResponseWriter, r *Request)) {
	if f == nil {
		panic("web: nil handler for " + pattern)
	}
	m.Handle(pattern, HandlerFunc(f))
}

// Handle registers h for pattern. It panics if pattern is malformed or is
// registered already (for the same method and host).
func (m *Mux) Handle(pattern string, h Handler) {
	if h == nil {
		panic("web: nil handler for " + pattern)
	}
	p, segs, err := parsePattern(pattern)
	if err != nil {
		panic("web: " + err.Error())
	}
	p.h = h
	p.nsegs = len(segs)
	p.multi = len(segs) > 0 && segs[len(segs)-1].kind == segMulti
	if m.trees == nil {
		m.trees = make(map[string]*methodTree)
	}
	t := m.trees[p.host]
	if t == nil {
		t = &methodTree{methods: make(map[string]*node)}
		m.trees[p.host] = t
	}
	n := t.methods[p.method]
	if n == nil {
		n = new(node)
		t.methods[p.method] = n
	}
	for _, s := range segs {
		switch s.kind {
		case segLit:
			if n.lits == nil {
				n.lits = make(map[string]*node)
			}
			c := n.lits[s.s]
			if c == nil {
				c = new(node)
				n.lits[s.s] = c
			}
			n = c
		case segWild:
			if n.wild == nil {
				n.wild = new(node)
			}
			n = n.wild
		case segMulti:
			if n.multi == nil {
				n.multi = new(node)
			}
			n = n.multi
		}
	}
	if n.pat != nil {
		panic(fmt.Sprintf("web: pattern %q conflicts with %q", pattern, n.pat.str))
	}
	n.pat = p
	m.pats = append(m.pats, pattern)
}

// Patterns returns the patterns registered, in order.
func (m *Mux) Patterns() []string { return slices.Clone(m.pats) }

type segKind uint8

const (
	segLit segKind = iota
	segWild
	segMulti
)

type segment struct {
	kind segKind
	s    string // the literal (unescaped; "/" for a final slash), or the wildcard's name
}

// parsePattern reads "[METHOD ][HOST]/[PATH]".
func parsePattern(s string) (*pattern, []segment, error) {
	p := &pattern{str: s}
	rest := s
	if i := strings.IndexAny(rest, " \t"); i >= 0 {
		p.method, rest = rest[:i], strings.TrimLeft(rest[i+1:], " \t")
		for j := 0; j < len(p.method); j++ {
			if !isToken(p.method[j]) {
				return nil, nil, fmt.Errorf("bad method in pattern %q", s)
			}
		}
	}
	i := strings.IndexByte(rest, '/')
	if i < 0 {
		return nil, nil, fmt.Errorf("pattern %q: host/path missing /", s)
	}
	p.host, rest = rest[:i], rest[i:]
	var segs []segment
	seen := map[string]bool{}
	for rest != "" {
		rest = rest[1:] // the slash
		if rest == "" {
			segs = append(segs, segment{kind: segMulti})
			p.names = append(p.names, "")
			p.trailer = true
			break
		}
		j := strings.IndexByte(rest, '/')
		if j < 0 {
			j = len(rest)
		}
		seg := rest[:j]
		rest = rest[j:]
		if !strings.Contains(seg, "{") {
			u, err := url.PathUnescape(seg)
			if err != nil {
				return nil, nil, fmt.Errorf("pattern %q: %v", s, err)
			}
			segs = append(segs, segment{kind: segLit, s: u})
			continue
		}
		if seg[0] != '{' || seg[len(seg)-1] != '}' || strings.Count(seg, "{") != 1 {
			return nil, nil, fmt.Errorf("pattern %q: a wildcard must be a whole segment", s)
		}
		name := seg[1 : len(seg)-1]
		if name == "$" {
			if rest != "" {
				return nil, nil, fmt.Errorf("pattern %q: {$} not at the end", s)
			}
			segs = append(segs, segment{kind: segLit, s: "/"})
			break
		}
		kind := segWild
		if n, ok := strings.CutSuffix(name, "..."); ok {
			if rest != "" {
				return nil, nil, fmt.Errorf("pattern %q: {%s} not at the end", s, name)
			}
			name, kind = n, segMulti
		}
		if !validName(name) {
			return nil, nil, fmt.Errorf("pattern %q: bad wildcard name %q", s, name)
		}
		if seen[name] {
			return nil, nil, fmt.Errorf("pattern %q: duplicate wildcard name %q", s, name)
		}
		seen[name] = true
		segs = append(segs, segment{kind: kind, s: name})
		p.names = append(p.names, name)
	}
	return p, segs, nil
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c != '_' && !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') && (i == 0 || !('0' <= c && c <= '9')) {
			return false
		}
	}
	return true
}

// ServeHTTP routes r to the handler of the pattern that matches it best.
func (m *Mux) ServeHTTP(w *ResponseWriter, r *Request) {
	if r.Target() == "*" {
		// As ServeMux: "*" names no resource.
		if r.ProtoAtLeast(1, 1) {
			w.Header().Set("Connection", "close")
		}
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	p := r.Path()
	if r.method != "CONNECT" && !isClean(p) {
		cp := cleanPath(p)
		if cp != p {
			target := cp
			if r.hasQ {
				target += "?" + r.RawQuery()
			}
			redirect(w, r, target, http.StatusTemporaryRedirect)
			return
		}
	}
	if p == "" {
		p = "/"
	}
	base := r.path.off
	if r.path.end == r.path.off {
		base = -1 // no path in the bytes: "/" stands for it
	}
	host := stripPort(r.Host())
	var pat *pattern
	var slash bool
	if r.router == m {
		pat, slash = r.route, r.slash // found by StreamBody, for the same path
	} else {
		pat, slash = m.find(host, p, base, r)
	}
	r.router, r.route, r.slash = nil, nil, false
	if slash {
		// /tree for /tree/: redirect, as ServeMux does.
		target := p + "/"
		if r.hasQ {
			target += "?" + r.RawQuery()
		}
		r.values = r.values[:0]
		redirect(w, r, target, http.StatusTemporaryRedirect)
		return
	}
	if pat != nil {
		r.pattern = pat.str
		pat.h.ServeHTTP(w, r)
		return
	}
	r.values = r.values[:0]
	if allow := m.allowed(host, p); allow != "" {
		w.Header().Set("Allow", allow)
		Error(w, "Method Not Allowed", http.StatusMethodNotAllowed)
		return
	}
	NotFound(w, r)
}

// find finds the route of r, whose path is p (clean) at offset base of its
// bytes: the pattern that matches (its values go to r), or slash when the
// answer is a redirect to p with a trailing slash, as ServeMux's.
func (m *Mux) find(host, p string, base int32, r *Request) (pat *pattern, slash bool) {
	pat = m.match(host, r.method, p, base, r)
	if (pat == nil || !pat.exact(p)) && !strings.HasSuffix(p, "/") {
		var scratch Request
		if n2 := m.matchAlloc(host, r.method, p+"/", &scratch); n2 != nil && n2.exact(p+"/") {
			return pat, true
		}
	}
	return pat, false
}

// match finds the pattern for method and path; base is the offset of
// path in r's bytes (for the wildcards' spans). The values go to r.
func (m *Mux) match(host, method, path string, base int32, r *Request) *pattern {
	if host != "" {
		if p := m.trees[host].match(method, path, base, r); p != nil {
			return p
		}
	}
	return m.trees[""].match(method, path, base, r)
}

// matchAlloc matches a path that is not in r's bytes (the redirect
// check); its values are not kept.
func (m *Mux) matchAlloc(host, method, path string, r *Request) *pattern {
	return m.match(host, method, path, -1, r)
}

func (t *methodTree) match(method, path string, base int32, r *Request) *pattern {
	if t == nil {
		return nil
	}
	try := func(n *node) *pattern {
		r.values = r.values[:0]
		if n := n.matchPath(path, 0, base, r); n != nil {
			names := n.pat.names
			j := 0
			for _, name := range names {
				if name == "" {
					// A trailing slash records no value.
					r.values = slices.Delete(r.values, j, j+1)
					continue
				}
				r.values[j].name = name
				j++
			}
			return n.pat
		}
		return nil
	}
	if p := try(t.methods[method]); p != nil {
		return p
	}
	if method == "HEAD" {
		if p := try(t.methods["GET"]); p != nil {
			return p
		}
	}
	return try(t.methods[""])
}

// matchPath matches path[i:] (which starts with '/', or is empty when
// the whole path is matched) below n.
func (n *node) matchPath(path string, i int, base int32, r *Request) *node {
	if n == nil {
		return nil
	}
	if i == len(path) {
		if n.pat == nil {
			return nil
		}
		return n
	}
	var seg string
	var next int
	if path[i:] == "/" {
		seg, next = "/", len(path)
	} else {
		e := strings.IndexByte(path[i+1:], '/')
		if e < 0 {
			next = len(path)
		} else {
			next = i + 1 + e
		}
		seg = path[i+1 : next]
	}
	if n.lits != nil {
		if c := n.lits[seg]; c != nil || strings.IndexByte(seg, '%') >= 0 {
			if c == nil {
				if u, err := url.PathUnescape(seg); err == nil {
					c = n.lits[u]
				}
			}
			if f := c.matchPath(path, next, base, r); f != nil {
				return f
			}
		}
	}
	k := len(r.values)
	if n.wild != nil && seg != "/" {
		r.values = append(r.values, pathValue{v: spanOf(base, i+1, next)})
		if f := n.wild.matchPath(path, next, base, r); f != nil {
			return f
		}
		r.values = r.values[:k]
	}
	if n.multi != nil && n.multi.pat != nil {
		r.values = append(r.values, pathValue{v: spanOf(base, i+1, len(path))})
		return n.multi
	}
	return nil
}

// spanOf returns the span of path[i:j] in the request's bytes, where path
// starts at base; an empty span when path is not in them (base < 0).
func spanOf(base int32, i, j int) span {
	if base >= 0 {
		return span{base + int32(i), base + int32(j)}
	}
	return span{} // the redirect check does not keep values
}

// allowed returns the Allow header for a path that matches only for other
// methods, or "".
func (m *Mux) allowed(host, path string) string {
	var ms []string
	hosts := []string{""}
	if host != "" {
		hosts = []string{host, ""}
	}
	var scratch Request
	for _, h := range hosts {
		t := m.trees[h]
		if t == nil {
			continue
		}
		for method, n := range t.methods {
			if method == "" {
				continue
			}
			if n.matchPath(path, 0, -1, &scratch) != nil || !strings.HasSuffix(path, "/") && n.matchPath(path+"/", 0, -1, &scratch) != nil {
				if !slices.Contains(ms, method) {
					ms = append(ms, method)
				}
				if method == "GET" && !slices.Contains(ms, "HEAD") {
					ms = append(ms, "HEAD")
				}
			}
		}
	}
	slices.Sort(ms)
	return strings.Join(ms, ", ")
}

// isClean reports whether p is a clean path: no empty, "." or ".."
// segment (a final slash aside).
func isClean(p string) bool {
	if p == "" || p[0] != '/' {
		return p == ""
	}
	for i := 0; i < len(p); i++ {
		if p[i] != '/' {
			continue
		}
		rest := p[i+1:]
		switch {
		case rest == "":
		case rest[0] == '/':
			return false
		case rest == "." || rest == "..":
			return false
		case strings.HasPrefix(rest, "./") || strings.HasPrefix(rest, "../"):
			return false
		}
	}
	return true
}

// cleanPath is net/http's: path.Clean, keeping a final slash.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		if len(p) == len(np)+1 && strings.HasPrefix(p, np) {
			np = p
		} else {
			np += "/"
		}
	}
	return np
}

func stripPort(h string) string {
	if h == "" || strings.IndexByte(h, ':') < 0 {
		return h
	}
	if i := strings.LastIndexByte(h, ':'); i >= 0 && !strings.Contains(h[i:], "]") {
		h = h[:i]
	}
	return strings.TrimSuffix(strings.TrimPrefix(h, "["), "]")
}

// Error answers with code and the text msg, as net/http's Error does.
func Error(w *ResponseWriter, msg string, code int) {
	h := w.Header()
	h.Del("Content-Length")
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.WriteString(msg)
	w.WriteString("\n")
}

// NotFound answers 404 page not found.
func NotFound(w *ResponseWriter, r *Request) { Error(w, "404 page not found", http.StatusNotFound) }

// NotFoundHandler returns a handler that answers 404.
func NotFoundHandler() Handler { return HandlerFunc(NotFound) }

// Redirect answers with a redirect to target (code 3xx), as net/http's
// Redirect does for a target that is a path.
func Redirect(w *ResponseWriter, r *Request, target string, code int) { redirect(w, r, target, code) }

func redirect(w *ResponseWriter, r *Request, target string, code int) {
	h := w.Header()
	h.Set("Location", target)
	if r.method == "GET" || r.method == "HEAD" {
		h.Set("Content-Type", "text/html; charset=utf-8")
	}
	w.WriteHeader(code)
	if r.method == "GET" {
		w.WriteString("<a href=\"" + htmlEscaper.Replace(target) + "\">" + http.StatusText(code) + "</a>.\n\n")
	}
}

var htmlEscaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")
