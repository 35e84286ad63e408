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
// SIGINT or SIGTERM shuts it down: it stops accepting, lets every
// connection finish the commands it has sent, sends it what was written to
// it, closes it, then closes the loop.
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

// Stats are the server's counts.
type Stats struct {
	Conns       int    // connections open
	Topics      int    // topics with at least one subscriber
	Subscribers int    // subscriptions in all topics
	Published   uint64 // PUB commands served
	Delivered   uint64 // MSG lines written to subscribers
	Dropped     uint64 // connections closed for passing the output limit (netio.Stats.OutputLimitDisconnects of the executor)
	BadCommands uint64 // commands answered with ERR
}

// Server is the pub/sub service. Everything in it but ex and srv is owned
// by ex's loop.
type Server struct {
	ex  *executor.Executor
	srv netio.Server

	topics map[string]*topic
	stats  Stats
}

// New returns a server whose connections and registry live on ex. Each
// connection's output limit is its listener's (netio.WithOutputLimit).
func New(ex *executor.Executor) *Server {
	if ex == nil {
		panic("pubsub: New with nil executor")
	}
	s := &Server{ex: ex, topics: map[string]*topic{}}
	s.srv.Handler = s.open
	return s
}

// Serve serves the connections l accepts until l closes or the server
// shuts down. l must belong to the server's executor. Any goroutine.
func (s *Server) Serve(l *netio.Listener) {
	if l.Executor() != s.ex {
		panic("pubsub: Serve with a listener of another executor")
	}
	s.srv.Serve(l)
}

// session is one connection. Loop-owned.
type session struct {
	srv    *Server
	c      *netio.Conn
	topics map[string]struct{}
}

// open starts serving a new connection: its lines, until it ends. A
// connection that fails (a write past the output limit, a reset) or is
// closed (QUIT, the server's shutdown) ends its reading, so the end of
// ReadLines is the one place where a session ends. On the loop.
func (s *Server) open(c *netio.Conn) {
	ss := &session{srv: s, c: c, topics: map[string]struct{}{}}
	s.stats.Conns++
	netio.NewReader(c, MaxLine).ReadLines(func(line []byte) error { ss.command(line); return nil }).OnComplete(func(_ struct{}, err error) {
		if errors.Is(err, netio.ErrTooLong) {
			ss.reply("ERR line too long") // its framing is lost: close
		}
		ss.close()
	})
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
		ss.c.Close()
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

// reply writes one line to ss. A write that fails fails ss's reading too,
// which ends ss.
func (ss *session) reply(line string) { ss.c.WriteString(line + "\n") }

// topic is one topic's subscribers. Its messages go to them in the order
// of subs, which depends only on the order of SUB and UNSUB commands (not
// on a map's), so a run of the server replays exactly.
type topic struct {
	subs []*session
	at   map[*session]int // index in subs
}

func (s *Server) subscribe(ss *session, name string) {
	t := s.topics[name]
	if t == nil {
		t = &topic{at: map[*session]int{}}
		s.topics[name] = t
	}
	if _, ok := t.at[ss]; !ok {
		t.at[ss] = len(t.subs)
		t.subs = append(t.subs, ss)
		ss.topics[name] = struct{}{}
		s.stats.Subscribers++
	}
}

func (s *Server) unsubscribe(ss *session, name string) {
	t := s.topics[name]
	if t == nil {
		return
	}
	i, ok := t.at[ss]
	if !ok {
		return
	}
	last := t.subs[len(t.subs)-1]
	t.subs[i], t.at[last] = last, i
	t.subs[len(t.subs)-1] = nil
	t.subs = t.subs[:len(t.subs)-1]
	delete(t.at, ss)
	delete(ss.topics, name)
	s.stats.Subscribers--
	if len(t.subs) == 0 {
		delete(s.topics, name)
	}
}

// publish writes "MSG topic msg" to every subscriber of topic and returns
// how many it reached. A subscriber past its output limit is dropped.
func (s *Server) publish(topic, msg []byte) int {
	s.stats.Published++
	t := s.topics[string(topic)]
	if t == nil {
		return 0
	}
	line := make([]byte, 0, len("MSG  \n")+len(topic)+len(msg))
	line = append(append(append(append(append(line, "MSG "...), topic...), ' '), msg...), '\n')
	n := 0
	for _, ss := range t.subs { // a failed write ends ss later, in a queued callback: t.subs holds still
		if _, err := ss.c.Write(line); err == nil {
			n++
		} // else ss is past its output limit: its reading ends, and so does ss
	}
	s.stats.Delivered += uint64(n)
	return n
}

// close ends ss once its reading ended: its subscriptions go, and its
// connection closes (what was written before is still sent, unless the
// output limit failed it: netio counts those, and Stats reports them as
// Dropped).
func (ss *session) close() {
	s := ss.srv
	for topic := range ss.topics {
		s.unsubscribe(ss, topic)
	}
	s.stats.Conns--
	ss.c.Close()
}

// Stats returns the server's counts. Any goroutine but the loop's.
func (s *Server) Stats(ctx context.Context) (Stats, error) {
	return future.Do(ctx, s.ex, func() (Stats, error) { return s.snapshot(), nil })
}

// snapshot returns the server's counts. On the loop.
func (s *Server) snapshot() Stats {
	st := s.stats
	st.Topics = len(s.topics)
	st.Dropped = netio.StatsOf(s.ex).OutputLimitDisconnects
	return st
}

// Shutdown shuts the server down gracefully: it stops accepting, lets
// every connection finish the commands it has sent, closes it once what
// was written to it has been sent (netio.Server.Shutdown), then shuts the
// executor down. Any goroutine but the loop's.
func (s *Server) Shutdown(ctx context.Context) error {
	return errors.Join(s.srv.Shutdown(ctx), s.ex.Shutdown(ctx))
}

func main() {
	addr := flag.String("addr", "127.0.0.1:7070", "TCP `address` to listen on")
	limit := flag.Int("limit", 1<<20, "output limit of a connection, in `bytes`: a subscriber whose unsent output passes it is disconnected")
	flag.Parse()

	ex := executor.New(executor.WithName("pubsub"))
	ex.Start()
	srv := New(ex)
	l, err := netio.Listen(ex, "tcp", *addr, netio.WithOutputLimit(*limit))
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
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Fatalf("pubsub: shutdown: %v", err)
	}
	log.Print("pubsub: stopped")
}
