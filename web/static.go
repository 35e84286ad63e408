package web

// The file server: net/http's FileServer, ServeFile and their rules
// (net/http/fs.go), served from the loop.
//
// A request goes through these steps, each a fileio.Job: its Run off
// the loop, on the executor's file workers (fileio), its Done on the
// connection's loop:
//
//	open:   Open, Stat, the index.html of a directory, its listing, the
//	        Content-Type (by extension, else sniffed from the first 512
//	        bytes) — off the loop
//	answer: redirects, errors, preconditions, ranges, the head — loop
//	body:   each part of the body in order: framing bytes written, file
//	        bytes sent by netio's SendFile (an *os.File, the response at
//	        the front of the connection's order) or read off the loop in
//	        pieces and written, a piece once the one before has left
//	close:  the files closed off the loop, the fileReq put back on it
//
// Invariants:
//   - no call of an http.FileSystem or http.File runs on the loop;
//   - the response is Later from the start and ends once, at finish;
//   - a fileReq is used by one request at a time, and goes back to its
//     pool after the files are closed;
//   - at most one job of a fileReq is out at a time: Run and Done never
//     overlap, and Done with an error (the executor closed) touches
//     nothing of the loop's, only closes the files.

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"mime"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/fileio"
)

// FileServer returns a handler that serves requests with the contents of
// the file system rooted at root, with net/http's FileServer's answers:
// GET and HEAD, Range (one range, or several as multipart/byteranges),
// If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since and
// If-Range, Last-Modified, Content-Type by extension else sniffed,
// index.html for a directory, a listing for a directory without one, the
// redirects of /index.html to ./ and of a directory to its name with a
// slash, and 404, 403 or 500 for the errors of opening a file. To serve a
// directory of the operating system, use http.Dir, which keeps requests
// inside it: a cleaned path has no "..", and http.Dir follows symbolic
// links, as net/http does.
//
//	mux.Handle("GET /static/", web.StripPrefix("/static", web.FileServer(http.Dir("/srv/www"))))
//
// The handler runs on the loop but never calls root there: opening,
// stat, directory reads and file reads run on the executor's file workers
// (fileio jobs: package fileio's few goroutines per executor; under
// package sim, on the simulated disk's clock), and the loop goes on
// serving meanwhile. A panic in root's code is recovered there and the
// request gets a 500. The body of an *os.File (what http.Dir opens) goes
// by netio's Conn.SendFile: on a plain TCP or Unix connection of the
// epoll backend that is sendfile(2), with no copy through user space;
// elsewhere (TLS, io_uring, the portable and simulated backends) netio
// reads it on the file workers and writes it. sendfile(2) runs on the
// loop: it takes the file's bytes from the page cache, as nginx does,
// and a part of the file that is not cached makes the loop wait while
// the kernel reads the disk. Other files are read on the file workers,
// a piece at a time.
//
// Differences from net/http: the boundary of a multipart/byteranges body
// is random, as net/http's, but made differently; Content-Type "" set by
// the handler is a Content-Type of "", not "do not sniff" (a Header has
// no nil values); there is no ServeContent (an io.ReadSeeker would be read
// on the loop). The handler logs nothing (net/http logs a failed
// directory read to the server's ErrorLog).
func FileServer(root http.FileSystem) Handler {
	if root == nil {
		panic("web: FileServer with nil root")
	}
	return &fileHandler{root: root}
}

// FileServerFS returns a handler that serves requests with the files of
// fsys, as FileServer(http.FS(fsys)). The files must implement io.Seeker,
// as for net/http.
func FileServerFS(fsys fs.FS) Handler { return FileServer(http.FS(fsys)) }

// ServeFile answers r with the contents of the named file or directory
// of the operating system, as net/http's ServeFile: a request whose path
// has a ".." element is refused (400), a path ending in /index.html is
// redirected to ./, and otherwise only name selects what is served.
func ServeFile(w *ResponseWriter, r *Request, name string) {
	dir, file := filepath.Split(name)
	serveFileAt(w, r, http.Dir(dir), file)
}

// ServeFileFS answers r with the named file or directory of fsys, as
// ServeFile does for the operating system's files.
func ServeFileFS(w *ResponseWriter, r *Request, fsys fs.FS, name string) {
	serveFileAt(w, r, http.FS(fsys), name)
}

func serveFileAt(w *ResponseWriter, r *Request, root http.FileSystem, name string) {
	upath, err := url.PathUnescape(r.Path())
	if err != nil || containsDotDot(upath) {
		serveError(w, "invalid URL path", http.StatusBadRequest)
		return
	}
	serveFile(w, r, root, upath, name, false)
}

// StripPrefix returns a handler that serves a request whose path starts
// with prefix by h, with the path (Path) without prefix; other requests
// get 404. As net/http's StripPrefix, for a prefix without escapes (the
// path compared is the escaped one).
func StripPrefix(prefix string, h Handler) Handler {
	if prefix == "" {
		return h
	}
	return HandlerFunc(func(w *ResponseWriter, r *Request) {
		p := r.Path()
		if len(p) < len(prefix) || p[:len(prefix)] != prefix {
			NotFound(w, r)
			return
		}
		r.path.off += int32(len(prefix))
		h.ServeHTTP(w, r)
	})
}

type fileHandler struct{ root http.FileSystem }

func (h *fileHandler) ServeHTTP(w *ResponseWriter, r *Request) {
	upath, err := url.PathUnescape(r.Path())
	if err != nil {
		serveError(w, "invalid URL path", http.StatusBadRequest)
		return
	}
	if !strings.HasPrefix(upath, "/") {
		upath = "/" + upath
	}
	serveFile(w, r, h.root, upath, path.Clean(upath), true)
}

const indexPage = "/index.html"

// serveFile starts serving name of root for r, whose decoded path is
// upath; redirect asks for the canonical directory and file URLs.
func serveFile(w *ResponseWriter, r *Request, root http.FileSystem, upath, name string, redirect bool) {
	if strings.HasSuffix(upath, indexPage) {
		localRedirect(w, r, "./")
		return
	}
	fr := getFileReq()
	fr.w, fr.r, fr.root, fr.upath, fr.name, fr.redirect = w, r, root, upath, name, redirect
	fr.haveType = w.Header().Has("Content-Type")
	fr.step = stepOpen
	w.laterOwn()
	fr.start(w.Executor())
}

// start hands fr's step to the executor's file workers; if the executor
// has closed, the files are closed here and the response left alone.
func (fr *fileReq) start(ex *executor.Executor) {
	if fileio.Start(ex, fr) != nil {
		fr.closeFiles()
	}
}

// The steps of a fileReq.
const (
	stepOpen = iota
	stepRead
	stepClose
)

// What the open step found.
const (
	foundError = iota
	foundRedirect
	foundDir
	foundFile
)

// fileReq is one request to the file server, from open to close.
type fileReq struct {
	w        *ResponseWriter
	r        *Request
	root     http.FileSystem
	upath    string // the request's decoded path
	name     string // what to open
	redirect bool
	haveType bool // the handler set a Content-Type

	step  int
	found int
	err   error
	loc   string // the redirect's target
	f     http.File
	extra http.File // a directory whose index.html is f
	d     fs.FileInfo
	ctype string
	list  []byte // a directory's listing

	// the body: parts in order, and where the current one is
	parts []part
	pi    int
	off   int64
	left  int64
	buf   []byte // a piece read off the loop
	n     int
	rerr  error
	mp    bytes.Buffer // multipart framing
	sniff [512]byte    // the first bytes, for the Content-Type

	// The last Last-Modified formatted, kept across requests (a string
	// never changes, so handing it out again is safe).
	modT time.Time
	modS string

	onFlushed func(struct{}, error)
}

// part is a piece of the body: framing bytes (b), or n bytes of the file
// from off.
type part struct {
	b      []byte
	off, n int64
}

var fileReqs sync.Pool

func getFileReq() *fileReq {
	if fr, ok := fileReqs.Get().(*fileReq); ok {
		return fr
	}
	fr := &fileReq{}
	fr.onFlushed = fr.flushed
	return fr
}

// Run is fileio.Job's: the step's blocking calls, off the loop.
func (fr *fileReq) Run() {
	switch fr.step {
	case stepOpen:
		fr.open()
	case stepRead:
		fr.readPiece()
	case stepClose:
		fr.closeFiles()
	}
}

// Done is fileio.Job's: on the loop after Run, or with an error once the
// executor has closed (then only the files are closed: the connection is
// gone).
func (fr *fileReq) Done(err error) {
	if errors.Is(err, executor.ErrClosed) {
		fr.closeFiles()
		return
	}
	switch fr.step {
	case stepOpen:
		if err != nil { // root panicked: a *future.PanicError
			fr.found, fr.err = foundError, err
		}
		fr.answer()
	case stepRead:
		if err != nil {
			fr.rerr = err
		}
		fr.wrote()
	case stepClose:
		fr.recycle()
	}
}

// open runs off the loop: what serveFile does up to serveContent, with
// what the loop then needs.
func (fr *fileReq) open() {
	f, err := fr.root.Open(fr.name)
	if err != nil {
		fr.found, fr.err = foundError, err
		return
	}
	fr.f = f
	d, err := f.Stat()
	if err != nil {
		fr.found, fr.err = foundError, err
		return
	}
	u := fr.upath
	if fr.redirect {
		if d.IsDir() {
			if u[len(u)-1] != '/' {
				fr.found, fr.loc = foundRedirect, path.Base(u)+"/"
				return
			}
		} else if u[len(u)-1] == '/' {
			base := path.Base(u)
			if base == "/" || base == "." {
				fr.found, fr.err = foundError, errTraverse
				return
			}
			fr.found, fr.loc = foundRedirect, "../"+base
			return
		}
	}
	if d.IsDir() {
		if u == "" || u[len(u)-1] != '/' {
			fr.found, fr.loc = foundRedirect, path.Base(u)+"/"
			return
		}
		if ff, err := fr.root.Open(strings.TrimSuffix(fr.name, "/") + indexPage); err == nil {
			if dd, err := ff.Stat(); err == nil {
				fr.extra, fr.f, d = f, ff, dd
			} else {
				ff.Close()
			}
		}
	}
	fr.d = d
	if d.IsDir() {
		fr.found = foundDir
		fr.list, fr.err = dirList(fr.f)
		return
	}
	fr.found = foundFile
	if !fr.haveType {
		fr.ctype = mime.TypeByExtension(filepath.Ext(d.Name()))
		if fr.ctype == "" {
			n, _ := io.ReadFull(fr.f, fr.sniff[:])
			fr.ctype = http.DetectContentType(fr.sniff[:n])
			if _, err := fr.f.Seek(0, io.SeekStart); err != nil {
				fr.err = errSeeker
			}
		}
	}
}

var (
	errTraverse  = errors.New("http: attempting to traverse a non-directory")
	errSeeker    = errors.New("seeker can't seek")
	errNoOverlap = errors.New("invalid range: failed to overlap")
	errBadRange  = errors.New("invalid range")
)

// dirList renders a directory's listing as net/http does.
func dirList(f http.File) ([]byte, error) {
	type ent struct {
		name string
		dir  bool
	}
	var ents []ent
	if d, ok := f.(fs.ReadDirFile); ok {
		list, err := d.ReadDir(-1)
		if err != nil {
			return nil, err
		}
		for _, e := range list {
			ents = append(ents, ent{e.Name(), e.IsDir()})
		}
	} else {
		list, err := f.Readdir(-1)
		if err != nil {
			return nil, err
		}
		for _, e := range list {
			ents = append(ents, ent{e.Name(), e.IsDir()})
		}
	}
	slices.SortFunc(ents, func(a, b ent) int { return strings.Compare(a.name, b.name) })
	var b bytes.Buffer
	b.WriteString("<!doctype html>\n<meta name=\"viewport\" content=\"width=device-width\">\n<pre>\n")
	for _, e := range ents {
		name := e.name
		if e.dir {
			name += "/"
		}
		u := url.URL{Path: name}
		b.WriteString("<a href=\"" + u.String() + "\">" + htmlReplacer.Replace(name) + "</a>\n")
	}
	b.WriteString("</pre>\n")
	return b.Bytes(), nil
}

var htmlReplacer = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;")

// answer runs on the loop once open is done.
func (fr *fileReq) answer() {
	w, r := fr.w, fr.r
	switch fr.found {
	case foundError:
		msg, code := toHTTPError(fr.err)
		serveError(w, msg, code)
		fr.finish()
		return
	case foundRedirect:
		localRedirect(w, r, fr.loc)
		fr.finish()
		return
	case foundDir:
		if fr.err != nil {
			Error(w, "Error reading directory", http.StatusInternalServerError)
			fr.finish()
			return
		}
		if checkIfModifiedSince(r, fr.d.ModTime()) == condFalse {
			writeNotModified(w)
			fr.finish()
			return
		}
		setLastModified(w, fr.d.ModTime())
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(fr.list)
		fr.finish()
		return
	}
	fr.serveContent()
}

// serveContent is net/http's, for the file fr.f of fr.d.
func (fr *fileReq) serveContent() {
	w, r := fr.w, fr.r
	h := w.Header()
	modtime := fr.d.ModTime()
	if !isZeroTime(modtime) {
		if !modtime.Equal(fr.modT) || fr.modS == "" {
			fr.modT, fr.modS = modtime, modtime.UTC().Format(http.TimeFormat)
		}
		h.Set("Last-Modified", fr.modS)
	}
	done, rangeReq := checkPreconditions(w, r, modtime)
	if done {
		fr.finish()
		return
	}
	code := http.StatusOK
	ctype := fr.ctype
	if !fr.haveType {
		if fr.err != nil {
			serveError(w, fr.err.Error(), http.StatusInternalServerError)
			fr.finish()
			return
		}
		h.Set("Content-Type", ctype)
	} else {
		ctype = h.Get("Content-Type")
	}
	size := fr.d.Size()
	if size < 0 {
		serveError(w, "negative content size computed", http.StatusInternalServerError)
		fr.finish()
		return
	}
	sendSize := size
	ranges, err := parseRange(rangeReq, size)
	switch err {
	case nil:
	case errNoOverlap:
		if size == 0 {
			ranges = nil
			break
		}
		h.Set("Content-Range", "bytes */"+strconv.FormatInt(size, 10))
		fallthrough
	default:
		serveError(w, err.Error(), http.StatusRequestedRangeNotSatisfiable)
		fr.finish()
		return
	}
	if sumRangesSize(ranges) > size {
		ranges = nil
	}
	fr.parts = fr.parts[:0]
	switch {
	case len(ranges) == 1:
		ra := ranges[0]
		sendSize = ra.length
		code = http.StatusPartialContent
		h.Set("Content-Range", ra.contentRange(size))
		fr.parts = append(fr.parts, part{off: ra.start, n: ra.length})
	case len(ranges) > 1:
		code = http.StatusPartialContent
		fr.mp.Reset()
		mw := multipart.NewWriter(&fr.mp)
		h.Set("Content-Type", "multipart/byteranges; boundary="+mw.Boundary())
		var ends []int
		for _, ra := range ranges {
			mw.CreatePart(ra.mimeHeader(ctype, size))
			ends = append(ends, fr.mp.Len())
		}
		mw.Close()
		b, start := fr.mp.Bytes(), 0
		sendSize = int64(len(b))
		for i, ra := range ranges {
			fr.parts = append(fr.parts, part{b: b[start:ends[i]]}, part{off: ra.start, n: ra.length})
			sendSize += ra.length
			start = ends[i]
		}
		fr.parts = append(fr.parts, part{b: b[start:]})
	default:
		fr.parts = append(fr.parts, part{off: 0, n: size})
	}
	h.Set("Accept-Ranges", "bytes")
	if len(ranges) > 0 || h.Get("Content-Encoding") == "" {
		h.Set("Content-Length", strconv.FormatInt(sendSize, 10))
	}
	w.WriteHeader(code)
	if r.method == "HEAD" || sendSize == 0 {
		fr.finish()
		return
	}
	fr.pi, fr.left = 0, -1
	fr.next()
}

// pieceSize is how much of a file that netio does not send is read off
// the loop at a time.
const pieceSize = 64 << 10

// next sends the body's parts from fr.pi on, until one waits.
func (fr *fileReq) next() {
	w := fr.w
	for ; fr.pi < len(fr.parts); fr.pi, fr.left = fr.pi+1, -1 {
		if w.c.closed {
			break // nobody to send to
		}
		p := fr.parts[fr.pi]
		if p.b != nil {
			w.Write(p.b)
			continue
		}
		if fr.left < 0 {
			fr.off, fr.left = p.off, p.n
			if osf, ok := fr.f.(*os.File); ok {
				if fut, ok := w.sendFile(osf, p.off, p.n); ok {
					if r, ready := fut.Peek(); ready { // the kernel took it all at once
						if r.Err != nil {
							break
						}
						continue
					}
					fr.left = 0
					fut.OnComplete(fr.onFlushed)
					return
				}
			}
		}
		if fr.left > 0 {
			if fr.buf == nil {
				fr.buf = make([]byte, pieceSize)
			}
			fr.step = stepRead
			fr.start(w.Executor())
			return
		}
	}
	fr.finish()
}

// readPiece runs off the loop: the next piece of the current part.
func (fr *fileReq) readPiece() {
	b := fr.buf[:min(int64(len(fr.buf)), fr.left)]
	var n int
	var err error
	if ra, ok := fr.f.(io.ReaderAt); ok {
		n, err = ra.ReadAt(b, fr.off)
	} else if _, err = fr.f.Seek(fr.off, io.SeekStart); err == nil {
		n, err = io.ReadFull(fr.f, b)
	}
	if n == len(b) {
		err = nil
	} else if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF // the file is shorter than its size said
	}
	fr.n, fr.rerr = n, err
}

// wrote runs on the loop after readPiece: the piece goes out, and the
// next is read once it has left.
func (fr *fileReq) wrote() {
	if fr.rerr != nil {
		fr.finish() // the response ends short and its connection closes
		return
	}
	fr.w.Write(fr.buf[:fr.n])
	fr.off += int64(fr.n)
	fr.left -= int64(fr.n)
	if c := fr.w.c; !c.closed && c.head() == fr.r {
		c.nc.Flush().OnComplete(fr.onFlushed)
		return
	}
	fr.flushed(struct{}{}, nil)
}

// flushed runs on the loop once the bytes sent have left (off it, if the
// executor closed meanwhile: then the files are closed, nothing else).
func (fr *fileReq) flushed(_ struct{}, err error) {
	if !fr.w.Executor().OnLoop() {
		fr.closeFiles()
		return
	}
	if err != nil {
		fr.finish()
		return
	}
	if fr.left == 0 {
		fr.pi, fr.left = fr.pi+1, -1
	}
	fr.next()
}

// finish ends the response and closes the files off the loop.
func (fr *fileReq) finish() {
	ex := fr.w.Executor()
	fr.w.End()
	fr.w, fr.r = nil, nil
	if fr.f == nil && fr.extra == nil {
		fr.recycle()
		return
	}
	fr.step = stepClose
	if fileio.Start(ex, fr) != nil {
		fr.closeFiles() // the executor has closed: nothing waits for the loop
		fr.recycle()
	}
}

func (fr *fileReq) closeFiles() {
	if fr.f != nil {
		fr.f.Close()
	}
	if fr.extra != nil {
		fr.extra.Close()
	}
	fr.f, fr.extra = nil, nil
}

func (fr *fileReq) recycle() {
	buf, parts := fr.buf, fr.parts[:0]
	onFlushed := fr.onFlushed
	mp := fr.mp
	mp.Reset()
	modT, modS := fr.modT, fr.modS
	*fr = fileReq{buf: buf, parts: parts, onFlushed: onFlushed, mp: mp, modT: modT, modS: modS}
	fileReqs.Put(fr)
}

// serveError is net/http's: the fields meant for a success go.
func serveError(w *ResponseWriter, text string, code int) {
	h := w.Header()
	for _, k := range [...]string{"Cache-Control", "Content-Encoding", "Etag", "Last-Modified"} {
		h.Del(k)
	}
	Error(w, text, code)
}

// toHTTPError is net/http's: a message that tells nothing of the error.
func toHTTPError(err error) (msg string, code int) {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "404 page not found", http.StatusNotFound
	case errors.Is(err, fs.ErrPermission):
		return "403 Forbidden", http.StatusForbidden
	case err != nil && err.Error() == "http: invalid or unsafe file path":
		return "404 page not found", http.StatusNotFound // http.Dir's errInvalidUnsafePath
	}
	return "500 Internal Server Error", http.StatusInternalServerError
}

// localRedirect is net/http's: a relative Location, with the query.
func localRedirect(w *ResponseWriter, r *Request, newPath string) {
	if q := r.RawQuery(); q != "" {
		newPath += "?" + q
	}
	w.Header().Set("Location", newPath)
	w.WriteHeader(http.StatusMovedPermanently)
}

func containsDotDot(v string) bool {
	if !strings.Contains(v, "..") {
		return false
	}
	for ent := range strings.FieldsFuncSeq(v, func(r rune) bool { return r == '/' || r == '\\' }) {
		if ent == ".." {
			return true
		}
	}
	return false
}

// Preconditions, as net/http reads them (RFC 9110 13).

type condResult int

const (
	condNone condResult = iota
	condTrue
	condFalse
)

func scanETag(s string) (etag string, remain string) {
	s = textproto.TrimString(s)
	start := 0
	if strings.HasPrefix(s, "W/") {
		start = 2
	}
	if len(s[start:]) < 2 || s[start] != '"' {
		return "", ""
	}
	for i := start + 1; i < len(s); i++ {
		c := s[i]
		switch {
		case c == 0x21 || c >= 0x23 && c <= 0x7E || c >= 0x80:
		case c == '"':
			return s[:i+1], s[i+1:]
		default:
			return "", ""
		}
	}
	return "", ""
}

func etagStrongMatch(a, b string) bool { return a == b && a != "" && a[0] == '"' }

func etagWeakMatch(a, b string) bool {
	return strings.TrimPrefix(a, "W/") == strings.TrimPrefix(b, "W/")
}

func checkIfMatch(w *ResponseWriter, r *Request) condResult {
	im := r.Header("If-Match")
	if im == "" {
		return condNone
	}
	for {
		im = textproto.TrimString(im)
		if len(im) == 0 {
			break
		}
		if im[0] == ',' {
			im = im[1:]
			continue
		}
		if im[0] == '*' {
			return condTrue
		}
		etag, remain := scanETag(im)
		if etag == "" {
			break
		}
		if etagStrongMatch(etag, w.Header().Get("Etag")) {
			return condTrue
		}
		im = remain
	}
	return condFalse
}

func checkIfUnmodifiedSince(r *Request, modtime time.Time) condResult {
	ius := r.Header("If-Unmodified-Since")
	if ius == "" || isZeroTime(modtime) {
		return condNone
	}
	t, err := http.ParseTime(ius)
	if err != nil {
		return condNone
	}
	if modtime.Truncate(time.Second).Compare(t) <= 0 {
		return condTrue
	}
	return condFalse
}

func checkIfNoneMatch(w *ResponseWriter, r *Request) condResult {
	buf := r.Header("If-None-Match")
	if buf == "" {
		return condNone
	}
	for {
		buf = textproto.TrimString(buf)
		if len(buf) == 0 {
			break
		}
		if buf[0] == ',' {
			buf = buf[1:]
			continue
		}
		if buf[0] == '*' {
			return condFalse
		}
		etag, remain := scanETag(buf)
		if etag == "" {
			break
		}
		if etagWeakMatch(etag, w.Header().Get("Etag")) {
			return condFalse
		}
		buf = remain
	}
	return condTrue
}

func checkIfModifiedSince(r *Request, modtime time.Time) condResult {
	if r.method != "GET" && r.method != "HEAD" {
		return condNone
	}
	ims := r.Header("If-Modified-Since")
	if ims == "" || isZeroTime(modtime) {
		return condNone
	}
	t, err := http.ParseTime(ims)
	if err != nil {
		return condNone
	}
	if modtime.Truncate(time.Second).Compare(t) <= 0 {
		return condFalse
	}
	return condTrue
}

func checkIfRange(w *ResponseWriter, r *Request, modtime time.Time) condResult {
	if r.method != "GET" && r.method != "HEAD" {
		return condNone
	}
	ir := r.Header("If-Range")
	if ir == "" {
		return condNone
	}
	if etag, _ := scanETag(ir); etag != "" {
		if etagStrongMatch(etag, w.Header().Get("Etag")) {
			return condTrue
		}
		return condFalse
	}
	if modtime.IsZero() {
		return condFalse
	}
	t, err := http.ParseTime(ir)
	if err != nil {
		return condFalse
	}
	if t.Unix() == modtime.Unix() {
		return condTrue
	}
	return condFalse
}

func isZeroTime(t time.Time) bool { return t.IsZero() || t.Unix() == 0 && t.Nanosecond() == 0 }

func setLastModified(w *ResponseWriter, modtime time.Time) {
	if !isZeroTime(modtime) {
		w.Header().Set("Last-Modified", modtime.UTC().Format(http.TimeFormat))
	}
}

func writeNotModified(w *ResponseWriter) {
	h := w.Header()
	h.Del("Content-Type")
	h.Del("Content-Length")
	h.Del("Content-Encoding")
	if h.Get("Etag") != "" {
		h.Del("Last-Modified")
	}
	w.WriteHeader(http.StatusNotModified)
}

func checkPreconditions(w *ResponseWriter, r *Request, modtime time.Time) (done bool, rangeHeader string) {
	ch := checkIfMatch(w, r)
	if ch == condNone {
		ch = checkIfUnmodifiedSince(r, modtime)
	}
	if ch == condFalse {
		w.WriteHeader(http.StatusPreconditionFailed)
		return true, ""
	}
	switch checkIfNoneMatch(w, r) {
	case condFalse:
		if r.method == "GET" || r.method == "HEAD" {
			writeNotModified(w)
		} else {
			w.WriteHeader(http.StatusPreconditionFailed)
		}
		return true, ""
	case condNone:
		if checkIfModifiedSince(r, modtime) == condFalse {
			writeNotModified(w)
			return true, ""
		}
	}
	rangeHeader = r.Header("Range")
	if rangeHeader != "" && checkIfRange(w, r, modtime) == condFalse {
		rangeHeader = ""
	}
	return false, rangeHeader
}

// httpRange is a range of the file: length bytes from start.
type httpRange struct{ start, length int64 }

func (r httpRange) contentRange(size int64) string {
	return "bytes " + strconv.FormatInt(r.start, 10) + "-" + strconv.FormatInt(r.start+r.length-1, 10) + "/" + strconv.FormatInt(size, 10)
}

func (r httpRange) mimeHeader(contentType string, size int64) textproto.MIMEHeader {
	return textproto.MIMEHeader{
		"Content-Range": {r.contentRange(size)},
		"Content-Type":  {contentType},
	}
}

// parseRange is net/http's (RFC 9110 14.1.2).
func parseRange(s string, size int64) ([]httpRange, error) {
	if s == "" {
		return nil, nil
	}
	const b = "bytes="
	if !strings.HasPrefix(s, b) {
		return nil, errBadRange
	}
	var ranges []httpRange
	noOverlap := false
	for ra := range strings.SplitSeq(s[len(b):], ",") {
		ra = textproto.TrimString(ra)
		if ra == "" {
			continue
		}
		start, end, ok := strings.Cut(ra, "-")
		if !ok {
			return nil, errBadRange
		}
		start, end = textproto.TrimString(start), textproto.TrimString(end)
		var r httpRange
		if start == "" {
			if end == "" || end[0] == '-' {
				return nil, errBadRange
			}
			i, err := strconv.ParseInt(end, 10, 64)
			if i < 0 || err != nil {
				return nil, errBadRange
			}
			r.start = size - min(i, size)
			r.length = size - r.start
		} else {
			i, err := strconv.ParseInt(start, 10, 64)
			if err != nil || i < 0 {
				return nil, errBadRange
			}
			if i >= size {
				noOverlap = true
				continue
			}
			r.start = i
			if end == "" {
				r.length = size - r.start
			} else {
				i, err := strconv.ParseInt(end, 10, 64)
				if err != nil || r.start > i {
					return nil, errBadRange
				}
				r.length = min(i, size-1) - r.start + 1
			}
		}
		ranges = append(ranges, r)
	}
	if noOverlap && len(ranges) == 0 {
		return nil, errNoOverlap
	}
	return ranges, nil
}

func sumRangesSize(ranges []httpRange) (size int64) {
	for _, ra := range ranges {
		size += ra.length
	}
	return size
}
