// Command pubsub is a line-based TCP publish/subscribe server on netio:
// every connection and the topic registry are served by one spindle loop,
// with no goroutine per connection and no lock.
//
// The protocol, one command per line ("\n" or "\r\n"; commands in any
// case, a topic is one word):
//
//	SUB topic        subscribe; answers "OK"
//	UNSUB topic      unsubscribe; answers "OK"
//	PUB topic msg    publish msg (the rest of the line) to topic's
//	                 subscribers; answers "OK n", n the subscribers it
//	                 reached
//	PING             answers "PONG"
//	QUIT             answers "BYE" and closes the connection
//
// A subscriber receives "MSG topic msg" for every message published to
// topic, in the order the server received them. A malformed command
// answers "ERR reason" and the connection goes on; a line longer than
// MaxLine answers "ERR line too long" and the connection is closed, since
// its framing is lost.
//
// # Slow subscribers
//
// A subscriber that does not read what it is sent is disconnected once its
// unsent output would pass the output limit (-limit, 1 MiB by default, on
// top of what the kernel's socket buffers hold): netio fails the connection
// with netio.ErrOutputLimit and drops its unsent output, and the server
// counts it in Stats.Dropped. The limit holds for every connection, so a
// publisher that never reads its replies meets the same end. Disconnecting rather than dropping messages
// is deliberate (it is Redis's policy for pub/sub clients too): a
// subscriber that silently missed messages could not tell, while one that
// is disconnected knows, and can reconnect and catch up from the source of
// truth; the server's memory stays bounded, and publishers never wait for
// the slowest reader.
//
//	go run ./examples/pubsub -addr 127.0.0.1:7070
//	printf 'SUB news\n' | nc 127.0.0.1 7070          # in one terminal, stays open
//	printf 'PUB news hello world\n' | nc -q1 127.0.0.1 7070
//
// SIGINT or SIGTERM shuts it down: it stops accepting, sends every
// connection what was already written to it, closes them, then closes the
// loop.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"log"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spindle-rt/spindle/executor"
	"github.com/spindle-rt/spindle/future"
	"github.com/spindle-rt/spindle/netio"
)

// MaxLine bounds the length of a command line, its "\n" excluded.
const MaxLine = 64 << 10

// DefaultLimit is the output limit of a connection unless New is told
// otherwise.
const DefaultLimit = 1 << 20

// Stats are the server's counts.
type Stats struct {
	Conns       int    // connections open
	Topics      int    // topics with at least one subscriber
	Subscribers int    // subscriptions in all topics
	Published   uint64 // PUB commands served
	Delivered   uint64 // MSG lines written to subscribers
	Dropped     uint64 // connections closed for passing the output limit
	BadCommands uint64 // commands answered with ERR
}

// Server is the pub/sub service. Everything in it but ex and limit is
// owned by ex's loop.
type Server struct {
	ex    *executor.Executor
	limit int

	topics   map[string]map[*session]struct{}
	sessions map[*session]struct{}
	stats    Stats
	closing  bool
}

// New returns a server whose connections and registry live on ex. limit
// is each connection's output limit (see the package doc); limit <= 0
// means DefaultLimit.
func New(ex *executor.Executor, limit int) *Server {
	if ex == nil {
		panic("pubsub: New with nil executor")
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	return &Server{ex: ex, limit: limit, topics: map[string]map[*session]struct{}{}, sessions: map[*session]struct{}{}}
}

// Serve serves the connections l accepts until l or the executor closes.
// l must belong to the server's executor. Any goroutine.
func (s *Server) Serve(l *netio.Listener) {
	if l.Executor() != s.ex {
		panic("pubsub: Serve with a listener of another executor")
	}
	netio.Serve(l, s.open)
}

// session is one connection. Loop-owned.
type session struct {
	srv    *Server
	c      *netio.Conn
	topics map[string]struct{}
	part   []byte // the start of a line split across receives
	recv   func([]byte, error)
	closed bool
}

// open starts serving a new connection. On the loop.
func (s *Server) open(c *netio.Conn) {
	if s.closing {
		c.Close()
		return
	}
	c.SetOutputLimit(s.limit)
	ss := &session{srv: s, c: c, topics: map[string]struct{}{}}
	ss.recv = ss.received
	s.sessions[ss] = struct{}{}
	s.stats.Conns++
	c.Recv().OnComplete(ss.recv)
}

// received handles the bytes of one receive and asks for the next.
func (ss *session) received(b []byte, err error) {
	if ss.closed {
		return
	}
	if err != nil {
		ss.close() // io.EOF, a reset, the output limit, or the server closing
		return
	}
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			if len(ss.part)+len(b) > MaxLine {
				ss.reply("ERR line too long")
				ss.close()
				return
			}
			ss.part = append(ss.part, b...) // Recv's slice is reused: copy
			break
		}
		line := b[:i]
		if len(ss.part) > 0 {
			line = append(ss.part, line...)
			ss.part = ss.part[:0]
		}
		b = b[i+1:]
		if len(line) > MaxLine {
			ss.reply("ERR line too long")
			ss.close()
			return
		}
		ss.command(bytes.TrimSuffix(line, []byte("\r")))
		if ss.closed {
			return
		}
	}
	if cap(ss.part) > 0 && len(ss.part) == 0 {
		ss.part = nil // idle again: hold no buffer
	}
	ss.c.Recv().OnComplete(ss.recv)
}

// command runs one command line.
func (ss *session) command(line []byte) {
	s := ss.srv
	verb, rest, _ := bytes.Cut(line, []byte(" "))
	switch string(bytes.ToUpper(verb)) {
	case "PING":
		if len(rest) > 0 {
			ss.bad("PING takes no argument")
			return
		}
		ss.reply("PONG")
	case "QUIT":
		ss.reply("BYE")
		ss.close()
	case "SUB", "UNSUB":
		topic := string(rest)
		if !validTopic(rest) {
			ss.bad("usage: " + string(bytes.ToUpper(verb)) + " topic")
			return
		}
		if len(verb) == 3 {
			s.subscribe(ss, topic)
		} else {
			s.unsubscribe(ss, topic)
		}
		ss.reply("OK")
	case "PUB":
		topic, msg, ok := bytes.Cut(rest, []byte(" "))
		if !ok || !validTopic(topic) || len(msg) == 0 {
			ss.bad("usage: PUB topic message")
			return
		}
		n := s.publish(topic, msg)
		ss.reply("OK " + strconv.Itoa(n))
	default:
		ss.bad("unknown command")
	}
}

// validTopic says whether t is a topic: one word.
func validTopic(t []byte) bool {
	return len(t) > 0 && !bytes.ContainsAny(t, " \t")
}

func (ss *session) bad(reason string) {
	ss.srv.stats.BadCommands++
	ss.reply("ERR " + reason)
}

// reply writes one line to ss.
func (ss *session) reply(line string) {
	if _, err := ss.c.WriteString(line + "\n"); err != nil {
		ss.failed(err)
	}
}

// failed ends ss after a failed write: past the output limit, it is
// counted as dropped.
func (ss *session) failed(err error) {
	if errors.Is(err, netio.ErrOutputLimit) && !ss.closed {
		ss.srv.stats.Dropped++
	}
	ss.close()
}

func (s *Server) subscribe(ss *session, topic string) {
	subs := s.topics[topic]
	if subs == nil {
		subs = map[*session]struct{}{}
		s.topics[topic] = subs
	}
	if _, ok := subs[ss]; !ok {
		subs[ss] = struct{}{}
		ss.topics[topic] = struct{}{}
		s.stats.Subscribers++
	}
}

func (s *Server) unsubscribe(ss *session, topic string) {
	subs := s.topics[topic]
	if _, ok := subs[ss]; !ok {
		return
	}
	delete(subs, ss)
	delete(ss.topics, topic)
	s.stats.Subscribers--
	if len(subs) == 0 {
		delete(s.topics, topic)
	}
}

// publish writes "MSG topic msg" to every subscriber of topic and returns
// how many it reached. A subscriber past its output limit is dropped.
func (s *Server) publish(topic, msg []byte) int {
	s.stats.Published++
	subs := s.topics[string(topic)]
	if len(subs) == 0 {
		return 0
	}
	line := make([]byte, 0, len("MSG  \n")+len(topic)+len(msg))
	line = append(append(append(append(append(line, "MSG "...), topic...), ' '), msg...), '\n')
	n := 0
	for ss := range subs {
		if _, err := ss.c.Write(line); err != nil {
			ss.failed(err) // removes ss from subs: allowed while ranging
			continue
		}
		n++
	}
	s.stats.Delivered += uint64(n)
	return n
}

// close ends ss: its subscriptions go, and its connection closes (what was
// written before is still sent, unless the output limit failed it).
func (ss *session) close() {
	if ss.closed {
		return
	}
	ss.closed = true
	s := ss.srv
	for topic := range ss.topics {
		s.unsubscribe(ss, topic)
	}
	delete(s.sessions, ss)
	s.stats.Conns--
	ss.c.Close()
}

// Stats returns the server's counts. Any goroutine but the loop's.
func (s *Server) Stats(ctx context.Context) (Stats, error) {
	return future.Do(ctx, s.ex, func() (Stats, error) {
		st := s.stats
		st.Topics = len(s.topics)
		return st, nil
	})
}

// Shutdown closes every connection once what was written to it has been
// taken by the kernel (or ctx ends), then shuts the executor down. Close
// the listeners first, so that no connection arrives meanwhile. Any
// goroutine but the loop's.
func (s *Server) Shutdown(ctx context.Context) error {
	flushed, err := future.Do(ctx, s.ex, func() (*future.Future[[]future.Result[struct{}]], error) {
		s.closing = true
		fs := []*future.Future[struct{}]{future.Resolved(s.ex, struct{}{})} // AllSettled needs one
		for ss := range s.sessions {
			fs = append(fs, ss.c.Flush())
		}
		return future.AllSettled(fs...), nil
	})
	if err == nil {
		_, err = flushed.Await(ctx)
	}
	if err == nil {
		_, err = future.Do(ctx, s.ex, func() (struct{}, error) {
			for ss := range s.sessions {
				ss.close()
			}
			return struct{}{}, nil
		})
	}
	return errors.Join(err, s.ex.Shutdown(ctx))
}

func main() {
	addr := flag.String("addr", "127.0.0.1:7070", "TCP `address` to listen on")
	limit := flag.Int("limit", DefaultLimit, "output limit of a connection, in `bytes`: a subscriber whose unsent output passes it is disconnected")
	flag.Parse()

	ex := executor.New(executor.WithName("pubsub"))
	ex.Start()
	srv := New(ex, *limit)
	l, err := netio.Listen(ex, "tcp", *addr)
	if err != nil {
		ex.Close()
		log.Fatal(err)
	}
	srv.Serve(l)
	log.Printf("pubsub: listening on %s", l.Addr())

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	<-ctx.Done()
	stop()
	log.Print("pubsub: shutting down")
	l.Close()
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Fatalf("pubsub: shutdown: %v", err)
	}
	log.Print("pubsub: stopped")
}
