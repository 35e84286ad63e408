package child

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

// echoEnv makes the test binary a child that answers each line of its
// input with "got <line>".
const echoEnv = "SPINDLE_CHILD_TEST_ECHO"

func TestMain(m *testing.M) {
	if os.Getenv(echoEnv) != "" {
		var line string
		for {
			if _, err := fmt.Scanln(&line); err != nil {
				os.Exit(0)
			}
			fmt.Println("got", line)
		}
	}
	goleak.VerifyTestMain(m)
}

func TestStartTalks(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), echoEnv+"=1")
	in, out, err := Start(cmd)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"one", "two"} {
		if _, err := fmt.Fprintln(in, w); err != nil {
			t.Fatal(err)
		}
		got, err := out.ReadString('\n')
		if err != nil || strings.TrimSpace(got) != "got "+w {
			t.Fatalf("answer to %q: %q, %v", w, got, err)
		}
	}
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the child did not end cleanly once its input closed: %v", err)
	}
}

func TestStartFails(t *testing.T) {
	_, _, err := Start(exec.Command("/nonexistent/spindle-child"))
	if err == nil {
		t.Fatal("Start of a missing program succeeded")
	}
}
