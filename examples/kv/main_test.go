package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/internal/testkit/spindletest"
	"github.com/spindle-rt/spindle/shard"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// 64 goroutines load the service on 127.0.0.1: each writes its own keys,
// reads them back and reads a missing one. Every value reads back, and
// the per-shard counts add up exactly: keys and PUTs where Owner puts
// them, GETs and hits to the request.
func TestLoad(t *testing.T) {
	const clients, perClient = 64, 20
	g := shard.New(4)
	g.Start()
	defer g.Close()
	store := NewStore(g)
	srv := httptest.NewServer(store.Handler())
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients}}
	defer client.CloseIdleConnections()

	spindletest.Parallel(clients, func(c int) {
		for i := range perClient {
			key := fmt.Sprintf("c%d-k%d", c, i)
			url := srv.URL + "/kv/" + key
			if code, _, err := spindletest.Do(client, http.MethodPut, url, "v-"+key); err != nil || code != http.StatusNoContent {
				t.Errorf("PUT %s: %d, %v", key, code, err)
				return
			}
			if code, body, err := spindletest.Do(client, http.MethodGet, url, ""); err != nil || code != http.StatusOK || body != "v-"+key {
				t.Errorf("GET %s: %d %q, %v", key, code, body, err)
				return
			}
		}
		if code, _, err := spindletest.Do(client, http.MethodGet, fmt.Sprintf("%s/kv/missing-%d", srv.URL, c), ""); err != nil || code != http.StatusNotFound {
			t.Errorf("GET of a missing key: %d, %v", code, err)
		}
	})

	code, body, err := spindletest.Do(client, http.MethodGet, srv.URL+"/stats", "")
	if err != nil || code != http.StatusOK {
		t.Fatalf("GET /stats: %d, %v", code, err)
	}
	var stats []PartStats
	if err := json.Unmarshal([]byte(body), &stats); err != nil {
		t.Fatal(err)
	}
	wantKeys := make([]int, g.Len())
	for c := range clients {
		for i := range perClient {
			wantKeys[store.Owner(fmt.Sprintf("c%d-k%d", c, i))]++
		}
	}
	var gets, hits uint64
	for i, st := range stats {
		if st.Shard != i || st.Keys != wantKeys[i] || st.Puts != uint64(wantKeys[i]) {
			t.Errorf("shard %d: %+v, want %d keys and as many PUTs", i, st, wantKeys[i])
		}
		gets += st.Gets
		hits += st.Hits
	}
	if len(stats) != g.Len() || gets != clients*(perClient+1) || hits != clients*perClient {
		t.Errorf("%d shards, %d GETs, %d hits; want %d, %d, %d", len(stats), gets, hits, g.Len(), clients*(perClient+1), clients*perClient)
	}
}

// Once the group has shut down, handlers answer 503 at once.
func TestAfterShutdown(t *testing.T) {
	g := shard.New(2)
	g.Start()
	store := NewStore(g)
	if err := g.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, req := range []*http.Request{
		httptest.NewRequest(http.MethodGet, "/kv/a", nil),
		httptest.NewRequest(http.MethodPut, "/kv/a", strings.NewReader("x")),
		httptest.NewRequest(http.MethodGet, "/stats", nil),
	} {
		rec := httptest.NewRecorder()
		store.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusServiceUnavailable {
			t.Errorf("%s %s: status %d, want 503", req.Method, req.URL, rec.Code)
		}
	}
}
