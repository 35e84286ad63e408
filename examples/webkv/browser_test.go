package main

// The page in a real browser: headless chromium, driven over the DevTools
// protocol (a WebSocket, spoken with the test's own small client), loads
// the page, sets a key with the form, and sees it listed live through
// /ws/watch; a change made by another client appears too, and a delete
// removes it. The test skips when chromium is not installed.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/spindle-rt/spindle/internal/wsclient"
)

// removeWhenFree removes dir, trying again for up to ten seconds while
// processes that are exiting still write into it.
func removeWhenFree(t *testing.T, dir string) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.RemoveAll(dir)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Logf("leaving %s: %v", dir, err)
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// chromiumPath returns the browser to drive, or "".
func chromiumPath() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// cdp is a DevTools protocol session with one page.
type cdp struct {
	ws *wsclient.Client
	id int
}

// call sends a command and waits for its answer (events are skipped).
func (c *cdp) call(t *testing.T, method string, params any) json.RawMessage {
	t.Helper()
	c.id++
	msg, _ := json.Marshal(map[string]any{"id": c.id, "method": method, "params": params})
	if err := c.ws.Text(string(msg)); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	for {
		op, p, err := c.ws.ReadMessage()
		if err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if op != wsclient.OpText {
			continue
		}
		var res struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(p, &res); err != nil {
			t.Fatalf("%s: %v in %q", method, err, p)
		}
		if res.ID != c.id {
			continue // an event
		}
		if res.Error != nil {
			t.Fatalf("%s: %s", method, res.Error.Message)
		}
		return res.Result
	}
}

// eval evaluates a JavaScript expression in the page, awaiting it if it
// is a promise, and returns its value as JSON; an exception fails t.
func (c *cdp) eval(t *testing.T, expr string) string {
	t.Helper()
	raw := c.call(t, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true})
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
				Value       any    `json:"value"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	if res.Exception != nil {
		t.Fatalf("in the page: %s %s %v\n(%s)", res.Exception.Text, res.Exception.Exception.Description, res.Exception.Exception.Value, expr)
	}
	return string(res.Result.Value)
}

// waitFor is a page expression that resolves once cond (a JavaScript
// expression) is true, checked on each animation frame, and fails after
// 20 seconds.
func waitFor(cond string) string {
	return `new Promise((resolve, reject) => {
		const t0 = Date.now();
		(function check() {
			if (` + cond + `) resolve(true);
			else if (Date.now() - t0 > 20000) reject(new Error("timed out waiting for: " + ` + fmt.Sprintf("%q", cond) + `));
			else requestAnimationFrame(check);
		})();
	})`
}

func TestBrowser(t *testing.T) {
	bin := chromiumPath()
	if bin == "" {
		t.Skip("chromium is not installed (apt-get install chromium): the page is not checked in a browser")
	}
	_, addr := start(t)
	profile, err := os.MkdirTemp("", "webkv-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	// Chromium's helper processes outlive the browser process for a moment
	// and still write into its profile, so t.TempDir's one RemoveAll may
	// find the directory not empty: remove it once they have gone.
	t.Cleanup(func() { removeWhenFree(t, profile) })
	cmd := exec.Command(bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--no-first-run",
		"--disable-extensions", "--disable-background-networking", "--remote-debugging-port=0",
		"--user-data-dir="+profile, "about:blank")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	// "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID"
	br := bufio.NewReader(stderr)
	var devtools string
	for devtools == "" {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("chromium ended before listening: %v", err)
		}
		if _, rest, ok := strings.Cut(line, "DevTools listening on ws://"); ok {
			devtools, _, _ = strings.Cut(strings.TrimSpace(rest), "/")
		}
	}
	go io.Copy(io.Discard, br) // until chromium exits

	// The page target chromium opened.
	hc := client(t)
	var targets []struct {
		Type string `json:"type"`
		WS   string `json:"webSocketDebuggerUrl"`
	}
	res, err := hc.Get("http://" + devtools + "/json/list")
	if err != nil {
		t.Fatal(err)
	}
	err = json.NewDecoder(res.Body).Decode(&targets)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	var page string
	for _, tg := range targets {
		if tg.Type == "page" {
			page = tg.WS
			break
		}
	}
	if page == "" {
		t.Fatalf("no page target among %+v", targets)
	}
	path := page[strings.Index(page, "/devtools/"):]
	ws, err := wsclient.Dial(devtools, path)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	ws.C.SetDeadline(time.Now().Add(60 * time.Second))
	c := &cdp{ws: ws}

	// Load the page; it says "live" once its /ws/watch is open.
	do(t, hc, "PUT", "http://"+addr+"/kv/before", strings.NewReader("0"))
	c.call(t, "Page.navigate", map[string]any{"url": "http://" + addr + "/"})
	c.eval(t, waitFor(`document.readyState === "complete" && document.getElementById("status") && document.getElementById("status").textContent === "live"`))
	if got := c.eval(t, `[...document.querySelectorAll("#keys li")].map(li => li.dataset.key).join(",")`); got != `"before"` {
		t.Fatalf("listed at load: %s, want \"before\"", got)
	}

	// Set a key with the form: the page lists it when /ws/watch says so.
	c.eval(t, `document.getElementById("key").value = "from-browser";
		document.getElementById("value").value = "typed value";
		document.getElementById("set").click(); true`)
	c.eval(t, waitFor(`document.querySelector('#keys li[data-key="from-browser"]') !== null`))
	if res, body := do(t, hc, "GET", "http://"+addr+"/kv/from-browser", nil); res.StatusCode != 200 || body != "typed value" {
		t.Fatalf("GET the key the page set: %d %q", res.StatusCode, body)
	}

	// A change from another client appears, without a reload.
	do(t, hc, "PUT", "http://"+addr+"/kv/from-curl", strings.NewReader("x"))
	c.eval(t, waitFor(`document.querySelector('#keys li[data-key="from-curl"]') !== null`))

	// Delete with the form: the page drops it.
	c.eval(t, `document.getElementById("key").value = "from-browser"; document.getElementById("del").click(); true`)
	c.eval(t, waitFor(`document.querySelector('#keys li[data-key="from-browser"]') === null`))
	if res, _ := do(t, hc, "GET", "http://"+addr+"/kv/from-browser", nil); res.StatusCode != 404 {
		t.Fatalf("GET the key the page deleted: %d", res.StatusCode)
	}
	if got := c.eval(t, `[...document.querySelectorAll("#keys li")].map(li => li.dataset.key).join(",")`); got != `"before,from-curl"` {
		t.Fatalf("listed at the end: %s", got)
	}
}
