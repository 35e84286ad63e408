// Command kv is an HTTP key-value service sharded over one spindle loop per
// core.
//
// Every key is owned by one shard, g.Of(hash(key)): its value lives in that
// shard's part of the store (a shard.Sharded service) and only that shard's
// loop touches it, so the store needs no lock. A handler, which runs on a
// net/http goroutine, hands the request to the owner with shard.InvokeWith
// and awaits the answer with the request's context. /stats gathers every
// shard's counts with shard.InvokeAll.
//
//	go run ./examples/kv -addr 127.0.0.1:8080
//	curl -X PUT --data hello 127.0.0.1:8080/kv/greeting
//	curl 127.0.0.1:8080/kv/greeting
//	curl 127.0.0.1:8080/stats
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"hash/maphash"
	"io"
	"log"
	"net/http"
	"os"
	"os/signal"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/shard"
)

// part is one shard's part of the store. Only its shard's loop touches it.
type part struct {
	data map[string]string
	gets uint64 // GET requests answered
	hits uint64 // GET requests that found their key
	puts uint64 // PUT requests applied
}

// PartStats is what /stats reports for one shard.
type PartStats struct {
	Shard int    `json:"shard"`
	Keys  int    `json:"keys"`
	Gets  uint64 `json:"gets"`
	Hits  uint64 `json:"hits"`
	Puts  uint64 `json:"puts"`
}

// Store is the sharded key-value store.
type Store struct {
	g     *shard.Group
	parts *shard.Sharded[part]
	seed  maphash.Seed
}

// NewStore returns a store sharded over g.
func NewStore(g *shard.Group) *Store {
	return &Store{
		g:     g,
		parts: shard.NewSharded(g, func(int) *part { return &part{data: map[string]string{}} }),
		seed:  maphash.MakeSeed(),
	}
}

// Owner returns the shard that owns key.
func (s *Store) Owner(key string) int { return s.g.Of(maphash.String(s.seed, key)) }

// entry is a key and a value, carried inside a call.
type entry struct{ key, val string }

// found is get's answer.
type found struct {
	val string
	ok  bool
}

// get and put run on the owner's loop. They capture nothing; the key (and
// value) travel in the call as its argument.
func get(p *part, key string) (found, error) {
	p.gets++
	v, ok := p.data[key]
	if ok {
		p.hits++
	}
	return found{v, ok}, nil
}

func put(p *part, e entry) (struct{}, error) {
	p.puts++
	p.data[e.key] = e.val
	return struct{}{}, nil
}

// Get returns key's value and whether it is set.
func (s *Store) Get(ctx context.Context, key string) (string, bool, error) {
	f, err := shard.InvokeWith(s.parts, s.Owner(key), key, get).Await(ctx)
	return f.val, f.ok, err
}

// Put sets key's value.
func (s *Store) Put(ctx context.Context, key, val string) error {
	_, err := shard.InvokeWith(s.parts, s.Owner(key), entry{key, val}, put).Await(ctx)
	return err
}

// Stats returns every shard's counts, in shard order.
func (s *Store) Stats(ctx context.Context) ([]PartStats, error) {
	return shard.InvokeAll(s.parts, func(p *part) (PartStats, error) {
		i, _ := s.g.Current()
		return PartStats{Shard: i, Keys: len(p.data), Gets: p.gets, Hits: p.hits, Puts: p.puts}, nil
	}).Await(ctx)
}

// maxValue bounds the size of a value.
const maxValue = 1 << 20

// Handler returns the service's HTTP handler:
//
//	GET /kv/{key}   the value (404 if not set)
//	PUT /kv/{key}   sets the value to the request body
//	GET /stats      every shard's counts, as JSON
func (s *Store) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /kv/{key}", func(w http.ResponseWriter, r *http.Request) {
		v, ok, err := s.Get(r.Context(), r.PathValue("key"))
		switch {
		case err != nil:
			fail(w, err)
		case !ok:
			http.NotFound(w, r)
		default:
			_, _ = io.WriteString(w, v)
		}
	})
	mux.HandleFunc("PUT /kv/{key}", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxValue))
		if err != nil {
			http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
			return
		}
		if err := s.Put(r.Context(), r.PathValue("key"), string(body)); err != nil {
			fail(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /stats", func(w http.ResponseWriter, r *http.Request) {
		st, err := s.Stats(r.Context())
		if err != nil {
			fail(w, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(st)
	})
	return mux
}

func fail(w http.ResponseWriter, err error) {
	if errors.Is(err, executor.ErrClosed) {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	http.Error(w, err.Error(), http.StatusInternalServerError)
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "listen address")
	shards := flag.Int("shards", 0, "number of shards (0: GOMAXPROCS)")
	flag.Parse()

	g := shard.New(*shards, executor.WithName("kv"))
	g.Start()
	srv := &http.Server{Addr: *addr, Handler: NewStore(g).Handler(), ReadHeaderTimeout: 5 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.ListenAndServe() }()
	log.Printf("listening on %s with %d shards", *addr, g.Len())

	interrupted, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	select {
	case err := <-served:
		log.Print(err)
	case <-interrupted.Done():
	}
	// Stop taking requests first, then let the shards finish what they
	// accepted; past the deadline both close at once.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		log.Print(err)
	}
	if err := g.Shutdown(ctx); err != nil {
		log.Print(err)
	}
}
