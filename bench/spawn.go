package bench

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// listeningPrefix starts the line `lethe serve` (and `lethe bench
// --serve-ceiling`) prints on stdout once it accepts connections.
const listeningPrefix = "lethe: listening on "

// child is a server process started for the run.
type child struct {
	cmd     *exec.Cmd
	URL     string // as printed, with a trailing slash
	tail    *tailBuffer
	done    chan struct{}
	waitErr error // valid after done is closed
	cleanup func()
}

// startChild runs exe with args and waits (up to a minute) for its listening
// line. The child's stderr goes to logs and is kept for error messages. It
// runs in its own process group, so that Ctrl-C reaches only the benchmark,
// which then stops it in order.
func startChild(exe string, args []string, logs io.Writer) (*child, error) {
	c := &child{cmd: exec.Command(exe, args...), tail: &tailBuffer{max: 16 << 10}, done: make(chan struct{})}
	c.cmd.Stderr = io.MultiWriter(logs, c.tail)
	c.cmd.SysProcAttr = childAttrs()
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := c.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", exe, err)
	}
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), listeningPrefix); ok {
				select {
				case urlc <- strings.TrimSpace(u):
				default:
				}
			}
		}
	}()
	go func() {
		c.waitErr = c.cmd.Wait()
		close(c.done)
	}()
	select {
	case c.URL = <-urlc:
		return c, nil
	case <-c.done:
		return nil, fmt.Errorf("%s %s exited before listening: %v\n%s", exe, strings.Join(args, " "), c.waitErr, c.tail)
	case <-time.After(time.Minute):
		_ = c.cmd.Process.Kill()
		<-c.done
		return nil, fmt.Errorf("%s %s did not listen within a minute\n%s", exe, strings.Join(args, " "), c.tail)
	}
}

// PID returns the child's process id.
func (c *child) PID() int { return c.cmd.Process.Pid }

// exited reports whether the child has ended.
func (c *child) exited() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM, waits up to timeout for a clean exit, then kills.
func (c *child) stop(timeout time.Duration) error {
	defer func() {
		if c.cleanup != nil {
			c.cleanup()
		}
	}()
	if c.exited() {
		return fmt.Errorf("exited early: %v\n%s", c.waitErr, c.tail)
	}
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		_ = c.cmd.Process.Kill()
	}
	select {
	case <-c.done:
		if c.waitErr != nil {
			return fmt.Errorf("exited with %v\n%s", c.waitErr, c.tail)
		}
		return nil
	case <-time.After(timeout):
		_ = c.cmd.Process.Kill()
		<-c.done
		return fmt.Errorf("did not stop within %v of SIGTERM; killed", timeout)
	}
}

// serveArgs returns the `lethe serve` command line for a spawned server, and
// the temporary data directory it gets (to remove afterwards) when extra
// names neither --in-memory nor --data-dir (nor their environment variables).
func serveArgs(extra []string) (args []string, tmpDir string, err error) {
	args = []string{"serve", "--addr", "127.0.0.1:0", "--log-level", "warn"}
	chosen := os.Getenv("LETHE_DATA_DIR") != "" || os.Getenv("LETHE_IN_MEMORY") != ""
	for _, a := range extra {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && (name == "in-memory" || name == "data-dir") {
			chosen = true
		}
	}
	if !chosen {
		tmpDir, err = os.MkdirTemp("", "lethe-bench-data")
		if err != nil {
			return nil, "", err
		}
		args = append(args, "--data-dir", tmpDir)
	}
	return append(args, extra...), tmpDir, nil
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append(t.b[:0], t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

var errNoExecutable = errors.New("cannot find the lethe executable to spawn servers from")
