package peers

import (
	"net/http"
	"os"
	"os/exec"
	"testing"

	"github.com/lesismal/nbio/nbhttp/websocket"

	"github.com/spindle-rt/spindle/bench/netcase"
	"github.com/spindle-rt/spindle/bench/wscase"
)

// nbioWSEnv makes this test executable nbio's WebSocket echo server (value
// "1"), a process of its own, as ../wscase's servers are.
const nbioWSEnv = "SPINDLE_PEERS_NBIO_WS"

func init() {
	if os.Getenv(nbioWSEnv) == "1" {
		os.Exit(nbioWSMain())
	}
}

// nbioWSMain serves WebSocket echo on GET /ws/echo with nbhttp/websocket:
// one poller, the callbacks run on it.
func nbioWSMain() int {
	netcase.RaiseFileLimit()
	up := websocket.NewUpgrader()
	up.OnMessage(func(c *websocket.Conn, t websocket.MessageType, data []byte) {
		if err := c.WriteMessage(t, data); err != nil {
			c.Close()
		}
	})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /ws/echo", func(w http.ResponseWriter, r *http.Request) {
		up.Upgrade(w, r, nil)
	})
	s, err := startNbio(mux)
	if err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		return 1
	}
	defer s.Close()
	wscase.Answer(s.Addr(), os.Stdin, os.Stdout)
	return 0
}

func startWSSpindle(b testing.TB) (*wscase.Server, error) { return wscase.StartSpindle(b) }

// startWSNbio starts this executable as nbio's WebSocket server.
func startWSNbio(b testing.TB) (*wscase.Server, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), nbioWSEnv+"=1")
	return wscase.Start(b, cmd)
}

func wsEcho(start func(testing.TB) (*wscase.Server, error)) func(b *testing.B) {
	return func(b *testing.B) { wscase.Echo(b, start) }
}

func wsIdle(start func(testing.TB) (*wscase.Server, error)) func(b *testing.B) {
	return func(b *testing.B) { wscase.Idle(b, start) }
}
