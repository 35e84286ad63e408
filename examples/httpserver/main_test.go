package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/spindle-rt/spindle/executor"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func value(t *testing.T, resp *http.Response) int {
	t.Helper()
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s", resp.Status)
	}
	var body map[string]int
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	return body["value"]
}

// Concurrent clients increment shared counters; the loop serialises them, so
// no increment is lost and each key ends at exactly the number of requests.
func TestConcurrentClients(t *testing.T) {
	ex := executor.New()
	ex.Start()
	defer ex.Close()
	srv := httptest.NewServer(NewStore(ex).Handler())
	defer srv.Close()
	client := srv.Client()

	const clients, perClient, keys = 16, 50, 4
	var wg sync.WaitGroup
	seen := make([]map[int]bool, keys) // values returned per key must be distinct
	var mu sync.Mutex
	for k := range seen {
		seen[k] = map[int]bool{}
	}
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perClient {
				k := (c + i) % keys
				resp, err := client.Post(fmt.Sprintf("%s/incr?key=k%d", srv.URL, k), "", nil)
				if err != nil {
					t.Error(err)
					return
				}
				n := value(t, resp)
				mu.Lock()
				if seen[k][n] {
					t.Errorf("key k%d: value %d returned twice", k, n)
				}
				seen[k][n] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for k := range keys {
		resp, err := client.Get(fmt.Sprintf("%s/get?key=k%d", srv.URL, k))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := value(t, resp), clients*perClient/keys; got != want {
			t.Fatalf("key k%d = %d, want %d", k, got, want)
		}
	}
	client.CloseIdleConnections()
}

// After the executor closes, handlers answer 503 instead of hanging.
func TestClosedExecutor(t *testing.T) {
	ex := executor.New()
	ex.Start()
	store := NewStore(ex)
	ex.Close()
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(context.Background(), http.MethodPost, "/incr?key=a", nil)
	store.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503", rec.Code)
	}
}
