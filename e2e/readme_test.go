package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README's examples are run as a newcomer would type them, so that the
// README cannot drift from the code. Every fenced shell block (```sh, ```bash
// or ```shell) is run, in order, unless the line right before its fence is a
// marker:
//
//	<!-- readme-test: skip (why) -->   the block is not run (it installs
//	                                  something, or is the test suite itself)
//	<!-- readme-test: server -->      the block is one command that starts a
//	                                  server, which the blocks after it talk to
//
// A server block starts the real binary and stays up until the next server
// block (as a reader stops one with Ctrl-C before starting the next, both on
// port 8081). Every other block runs as one bash script with -e -u -o
// pipefail, in a temporary working directory shared by all blocks, and must
// exit 0; each curl in it must get a 2xx answer. Each block stands alone:
// variables do not carry from one block to the next.
//
// Commands are rewritten only where the reader's machine and the test's
// differ: `go run ./cmd/lethe` and `$(go env GOPATH)/bin/lethe` become
// `lethe`, which is the binary under test (first on PATH); a server listens on
// a free port rather than 8081, and 127.0.0.1:8081 / localhost:8081 in the
// blocks become its address. Go snippets must parse (as statements), and
// JavaScript snippets must pass node --check (skipped without node).

// readmeBlock is one fenced code block of a Markdown file.
type readmeBlock struct {
	line   int    // line number of the opening fence, from 1
	lang   string // the fence's info string: sh, go, js, ...
	marker string // the readme-test directive before the fence: "", "skip" or "server"
	text   string // the block's content, ending in a newline
}

// isShell reports whether the block is a shell example.
func (b readmeBlock) isShell() bool {
	return b.lang == "sh" || b.lang == "bash" || b.lang == "shell"
}

var readmeMarker = regexp.MustCompile(`^<!--\s*readme-test:\s*(\S+)\s*(.*?)\s*-->\s*$`)

// parseReadme returns the fenced code blocks of a Markdown document, with the
// readme-test marker of each. A marker that is not right before a fence, an
// unknown directive, a server marker on anything but a one-command shell
// block, and an unclosed fence are errors.
func parseReadme(src string) ([]readmeBlock, error) {
	var blocks []readmeBlock
	lines := strings.Split(src, "\n")
	marker, markerLine := "", 0
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t\r")
		if m := readmeMarker.FindStringSubmatch(l); m != nil {
			if m[1] != "skip" && !(m[1] == "server" && m[2] == "") {
				return nil, fmt.Errorf("README line %d: unknown readme-test marker %q (want `skip (why)` or `server`)", i+1, l)
			}
			marker, markerLine = m[1], i+1
			continue
		}
		if strings.HasPrefix(l, "<!--") && strings.Contains(l, "readme-test") {
			return nil, fmt.Errorf("README line %d: malformed readme-test marker %q", i+1, l)
		}
		fence, ok := strings.CutPrefix(l, "```")
		if !ok {
			if marker != "" {
				return nil, fmt.Errorf("README line %d: the readme-test marker is not right before a fence", markerLine)
			}
			continue
		}
		b := readmeBlock{line: i + 1, lang: strings.TrimSpace(fence), marker: marker}
		marker = ""
		var body strings.Builder
		closed := false
		for i++; i < len(lines); i++ {
			if strings.TrimRight(lines[i], " \t\r") == "```" {
				closed = true
				break
			}
			body.WriteString(lines[i] + "\n")
		}
		if !closed {
			return nil, fmt.Errorf("README line %d: the fence is never closed", b.line)
		}
		b.text = body.String()
		if b.marker == "server" && (!b.isShell() || len(shellCommands(b.text)) != 1) {
			return nil, fmt.Errorf("README line %d: a server block is a shell block with exactly one command", b.line)
		}
		blocks = append(blocks, b)
	}
	if marker != "" {
		return nil, fmt.Errorf("README line %d: the readme-test marker is not right before a fence", markerLine)
	}
	return blocks, nil
}

// shellCommands returns the lines of a shell block that are neither blank nor comments.
func shellCommands(text string) []string {
	var cmds []string
	for l := range strings.SplitSeq(text, "\n") {
		if t := strings.TrimSpace(l); t != "" && !strings.HasPrefix(t, "#") {
			cmds = append(cmds, t)
		}
	}
	return cmds
}

// readmeRunner runs a README's blocks in order, like a reader at a terminal.
type readmeRunner struct {
	dir    string   // the working directory of every block
	env    []string // the environment of every block and server
	server *readmeServer
	ran    int // shell blocks run, servers included
}

// readmeServer is a server started by a server block.
type readmeServer struct {
	line   int    // the block that started it
	addr   string // host:port it listens on
	cmd    *exec.Cmd
	stderr *lockedBuffer
	done   chan struct{}
	err    error // cmd.Wait's, once done is closed
}

// newReadmeRunner prepares the directory the blocks run in and a PATH whose
// first entries are lethe (the binary under test) and a curl that fails on an
// HTTP status outside 2xx (see the script).
func newReadmeRunner(t *testing.T, realCurl string) *readmeRunner {
	t.Helper()
	bin, err := filepath.Abs(letheBin)
	if err != nil {
		t.Fatal(err)
	}
	shims := t.TempDir()
	if err := os.Symlink(bin, filepath.Join(shims, "lethe")); err != nil {
		t.Fatal(err)
	}
	// curl as a reader runs it, with the status checked afterwards: the
	// answer still goes to stdout, and a status outside 2xx exits 22, curl's
	// own code for an HTTP error. --dump-header comes last, so it wins over
	// one in the example.
	script := `#!/usr/bin/env bash
headers=$(mktemp) || exit 1
trap 'rm -f "$headers"' EXIT
` + shellQuote(realCurl) + ` "$@" --dump-header "$headers" || exit
status=$(awk '/^HTTP\//{s=$2} END{print s}' "$headers")
case $status in
2??) ;;
*) echo "curl: the server answered HTTP ${status:-nothing}; the README test wants 2xx" >&2; exit 22 ;;
esac
`
	if err := os.WriteFile(filepath.Join(shims, "curl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		// The reader's environment sets no LETHE_ variable (the test
		// harness's own LETHE_BIN included), and no shell start-up file.
		if strings.HasPrefix(name, "LETHE_") || name == "BASH_ENV" || name == "ENV" || name == "PATH" || name == "CDPATH" {
			continue
		}
		env = append(env, kv)
	}
	env = append(env, "PATH="+shims+string(os.PathListSeparator)+os.Getenv("PATH"))
	r := &readmeRunner{dir: t.TempDir(), env: env}
	t.Cleanup(func() {
		if err := r.stopServer(); err != nil {
			t.Error(err)
		}
	})
	return r
}

// shellQuote quotes s for bash.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

var (
	// readmeLethe is how the README runs lethe from the repository or an install.
	readmeLethe = strings.NewReplacer("go run ./cmd/lethe", "lethe", "$(go env GOPATH)/bin/lethe", "lethe")
	// readmeAddr is the default address as the README's examples write it.
	readmeAddr = regexp.MustCompile(`\b(127\.0\.0\.1|localhost):8081\b`)
	// readmeAddrFlag is an --addr flag in a server command.
	readmeAddrFlag = regexp.MustCompile(`--addr[= ]\S+`)
	// readmeServe and readmeHelp find a lethe serve command and a request for
	// its help.
	readmeServe = regexp.MustCompile(`(^|[\s;&|(])lethe\s+serve\b`)
	readmeHelp  = regexp.MustCompile(`\s(-h|--?help)\b`)
)

// run runs one block: starts its server, or runs its commands against the
// running one.
func (r *readmeRunner) run(b readmeBlock) error {
	if !b.isShell() || b.marker == "skip" {
		return nil
	}
	r.ran++
	text := readmeLethe.Replace(b.text)
	if b.marker == "server" {
		return r.startServer(b.line, readmeAddrFlag.ReplaceAllString(text, "--addr=127.0.0.1:0"))
	}
	for _, c := range shellCommands(text) {
		if readmeServe.MatchString(c) && !readmeHelp.MatchString(c) {
			return fmt.Errorf("README line %d: %q runs a server in the foreground: mark the block `<!-- readme-test: server -->`, and give it no other command", b.line, c)
		}
	}
	if readmeAddr.MatchString(text) {
		if r.server == nil {
			return fmt.Errorf("README line %d: the block talks to %s, but no `readme-test: server` block before it starts a server", b.line, readmeAddr.FindString(text))
		}
		text = readmeAddr.ReplaceAllString(text, r.server.addr)
	}
	runCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(runCtx, "bash", "--noprofile", "--norc", "-e", "-u", "-o", "pipefail", "-x", "-c", text)
	// A free port even for a server the checks above missed.
	cmd.Dir, cmd.Env = r.dir, append(append([]string{}, r.env...), "LETHE_ADDR=127.0.0.1:0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("README line %d: the block failed: %v\n--- the block as run:\n%s--- its output (with bash's trace):\n%s%s", b.line, err, text, out.String(), r.serverLog())
	}
	return nil
}

// startServer stops the running server, if any, and starts the block's
// command on a free port, waiting for its listening line.
func (r *readmeRunner) startServer(line int, text string) error {
	if err := r.stopServer(); err != nil {
		return err
	}
	cmd := exec.Command("bash", "--noprofile", "--norc", "-c", text)
	cmd.Dir = r.dir
	// LETHE_ADDR for a command without --addr (the flag was rewritten).
	cmd.Env = append(append([]string{}, r.env...), "LETHE_ADDR=127.0.0.1:0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	s := &readmeServer{line: line, cmd: cmd, stderr: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stderr = s.stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("README line %d: start %q: %w", line, text, err)
	}
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "lethe: listening on "); ok {
				urlc <- u
			}
		}
	}()
	go func() {
		s.err = cmd.Wait()
		close(s.done)
	}()
	select {
	case u := <-urlc:
		pu, err := url.Parse(u)
		if err != nil {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			return fmt.Errorf("README line %d: listening line %q: %w", line, u, err)
		}
		s.addr = pu.Host
		r.server = s
		return nil
	case <-s.done:
		return fmt.Errorf("README line %d: the server command exited before listening (%v)\n--- the block as run:\n%s--- stderr:\n%s", line, s.err, text, s.stderr)
	case <-time.After(time.Minute):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		return fmt.Errorf("README line %d: the server did not listen within a minute\n%s", line, s.stderr)
	}
}

// stopServer stops the running server as Ctrl-C would and checks that it
// stopped cleanly.
func (r *readmeRunner) stopServer() error {
	s := r.server
	if s == nil {
		return nil
	}
	r.server = nil
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGINT)
	select {
	case <-s.done:
	case <-time.After(30 * time.Second):
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.done
		return fmt.Errorf("README line %d: the server did not stop within 30 s of SIGINT\n%s", s.line, s.stderr)
	}
	if s.err != nil {
		return fmt.Errorf("README line %d: the server exited with %v after SIGINT\n%s", s.line, s.err, s.stderr)
	}
	return nil
}

// serverLog returns the running server's stderr, for a failure report.
func (r *readmeRunner) serverLog() string {
	if r.server == nil {
		return ""
	}
	return fmt.Sprintf("--- the server's stderr (started by line %d):\n%s", r.server.line, r.server.stderr)
}

// checkGoSnippet parses a Go block as the statements of a function body.
func checkGoSnippet(b readmeBlock) error {
	src := "package p\n\nfunc _() {\n" + b.text + "}\n"
	if _, err := parser.ParseFile(token.NewFileSet(), "README.md", src, 0); err != nil {
		return fmt.Errorf("README line %d: the Go snippet does not parse (line numbers count from 3 lines above the block's first): %v", b.line, err)
	}
	return nil
}

// checkJSSnippet runs node --check on a JavaScript block, as an ES module (so
// top-level await is allowed).
func checkJSSnippet(node, dir string, b readmeBlock) error {
	f := filepath.Join(dir, fmt.Sprintf("readme-%d.mjs", b.line))
	if err := os.WriteFile(f, []byte(b.text), 0o644); err != nil {
		return err
	}
	if out, err := exec.Command(node, "--check", f).CombinedOutput(); err != nil {
		return fmt.Errorf("README line %d: the JavaScript snippet does not parse: %v\n%s", b.line, err, out)
	}
	return nil
}

// TestReadmeExamples runs every shell example of README.md against the real
// binary, in order (see the comment at the top of this file), and checks its
// Go and JavaScript snippets parse.
func TestReadmeExamples(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parseReadme(string(src))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("shell", func(t *testing.T) {
		realCurl, err := exec.LookPath("curl")
		if err != nil {
			t.Skip("SKIPPED, NOT RUN: curl is not installed, so the README's shell examples were not run")
		}
		r := newReadmeRunner(t, realCurl)
		servers, curls := 0, 0
		for _, b := range blocks {
			if err := r.run(b); err != nil {
				t.Error(err)
				continue
			}
			if b.isShell() && b.marker == "server" {
				servers++
			} else if b.isShell() && b.marker == "" && strings.Contains(b.text, "curl ") && readmeAddr.MatchString(b.text) {
				curls++
			}
		}
		// The README has a quick-start server, a manual-clock server and curl
		// examples against the latter: if none ran, the parser is broken.
		if servers < 2 || curls < 1 {
			t.Errorf("ran %d shell blocks: %d servers and %d blocks of curls against a server; want at least 2 and 1", r.ran, servers, curls)
		}
	})
	t.Run("go", func(t *testing.T) {
		n := 0
		for _, b := range blocks {
			if b.lang == "go" {
				n++
				if err := checkGoSnippet(b); err != nil {
					t.Error(err)
				}
			}
		}
		if n == 0 {
			t.Error("the README has no Go snippet: the parser is broken")
		}
	})
	t.Run("js", func(t *testing.T) {
		node, err := exec.LookPath("node")
		if err != nil {
			t.Skip("SKIPPED, NOT RUN: node is not installed, so the README's JavaScript snippets were not checked")
		}
		dir, n := t.TempDir(), 0
		for _, b := range blocks {
			if b.lang == "js" || b.lang == "javascript" {
				n++
				if err := checkJSSnippet(node, dir, b); err != nil {
					t.Error(err)
				}
			}
		}
		if n == 0 {
			t.Error("the README has no JavaScript snippet: the parser is broken")
		}
	})
}

// TestReadmeFlagTable: every flag that lethe serve -h lists has a row in the
// README's configuration table, with its environment variable.
func TestReadmeFlagTable(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for l := range strings.SplitSeq(string(src), "\n") {
		if strings.HasPrefix(l, "| `--") {
			rows = append(rows, l)
		}
	}
	out, err := exec.Command(letheBin, "serve", "-h").Output()
	if err != nil {
		t.Fatalf("lethe serve -h: %v", err)
	}
	flags := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(string(out), -1)
	if len(flags) == 0 {
		t.Fatalf("lethe serve -h lists no flags:\n%s", out)
	}
	for _, f := range flags {
		name := f[1]
		env := "`LETHE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + "`"
		found := false
		for _, row := range rows {
			if strings.Contains(row, "`--"+name+"`") && strings.Contains(row, env) {
				found = true
			}
		}
		if !found {
			t.Errorf("README's configuration table has no row for --%s with %s", name, env)
		}
	}
}

// TestReadmeRunnerCatchesBrokenExamples: the README test fails on each kind
// of broken example, so that it cannot pass by checking nothing.
func TestReadmeRunnerCatchesBrokenExamples(t *testing.T) {
	t.Parallel()
	realCurl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("SKIPPED, NOT RUN: curl is not installed")
	}
	const key = `KEY='` + emulatorKey + `'` + "\n"
	for _, tc := range []struct {
		name, readme, want string
	}{
		{"admin API without the manual clock", "<!-- readme-test: server -->\n```sh\nlethe serve --in-memory\n```\n\n```sh\n" + key +
			"curl -s -H \"x-lethe-master-key: $KEY\" -X POST http://127.0.0.1:8081/_lethe/purge\n```\n", "the server answered HTTP 404"},
		{"a signed resource without a signature", "<!-- readme-test: server -->\n```sh\ngo run ./cmd/lethe serve --in-memory --clock manual\n```\n\n```sh\n" +
			"curl -s http://localhost:8081/dbs\n```\n", "the server answered HTTP 401"},
		{"a failing command", "```sh\ngo run ./cmd/lethe bench --no-such-flag\n```\n", "exit status 2"},
		{"a server without its marker", "```sh\ngo run ./cmd/lethe serve --in-memory\n```\n", "runs a server in the foreground"},
		{"a failing command before a working one", "```sh\nfalse\ntrue\n```\n", "exit status 1"},
		{"a server that cannot start", "<!-- readme-test: server -->\n```sh\nlethe serve --in-memory --clock sundial\n```\n", "exited before listening"},
		{"no server to talk to", "```sh\ncurl -s http://127.0.0.1:8081/metrics\n```\n", "no `readme-test: server` block"},
		{"unreachable server", "```sh\ncurl -s http://127.0.0.1:1/metrics\n```\n", "exit status 7"},
		{"an unknown marker", "<!-- readme-test: skipp -->\n```sh\ntrue\n```\n", "unknown readme-test marker"},
		{"a marker away from its fence", "<!-- readme-test: skip (x) -->\n\n```sh\ntrue\n```\n", "not right before a fence"},
		{"a server block of two commands", "<!-- readme-test: server -->\n```sh\nlethe serve\nlethe serve\n```\n", "exactly one command"},
		{"a Go snippet that does not parse", "```go\nclient, _ := azcosmos.NewClient(\n```\n", "does not parse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks, err := parseReadme(tc.readme)
			if err == nil {
				r := newReadmeRunner(t, realCurl)
				for _, b := range blocks {
					if b.lang == "go" {
						err = checkGoSnippet(b)
					} else {
						err = r.run(b)
					}
					if err != nil {
						break
					}
				}
				err = errors.Join(err, r.stopServer())
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v\nwant one containing %q", err, tc.want)
			}
		})
	}
}
