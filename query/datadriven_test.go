package query

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The testdata files hold test cases in the style of cockroachdb/datadriven:
//
//	# A comment. Comments and blank lines between cases are kept verbatim.
//	expr
//	c.a + 1
//	----
//	(+ c.a 1)
//
// The first line names the command (and optional arguments), the lines up to
// "----" are the input, and the lines up to the next blank line or the end of
// the file are the expected output. go test ./query -rewrite replaces every
// expected output with the actual one; review the diff before keeping it.

var rewrite = flag.Bool("rewrite", false, "rewrite the expected outputs in testdata files")

// testCase is one command block from a testdata file.
type testCase struct {
	file     string
	line     int      // line of the command, from 1
	cmd      string   // first word of the command line
	args     []string // the other words
	input    string   // lines joined with \n
	expected string   // lines joined with \n

	header string // the command line as written
}

func (tc *testCase) String() string { return fmt.Sprintf("%s:%d", tc.file, tc.line) }

// chunk is either verbatim text (comments, blank lines) or a test case.
type chunk struct {
	text string
	tc   *testCase
}

// readTestFile splits a testdata file into chunks.
func readTestFile(tb testing.TB, path string) []chunk {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatalf("read test file: %v", err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	var chunks []chunk
	for i := 0; i < len(lines); {
		line := lines[i]
		if strings.TrimSpace(line) == "" || strings.HasPrefix(line, "#") {
			chunks = append(chunks, chunk{text: line})
			i++
			continue
		}
		fields := strings.Fields(line)
		tc := &testCase{file: filepath.Base(path), line: i + 1, cmd: fields[0], args: fields[1:], header: line}
		i++
		var input []string
		for ; i < len(lines) && lines[i] != "----"; i++ {
			input = append(input, lines[i])
		}
		if i == len(lines) {
			tb.Fatalf("%s: no ---- after the input", tc)
		}
		i++ // ----
		var expected []string
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			expected = append(expected, lines[i])
		}
		tc.input = strings.Join(input, "\n")
		tc.expected = strings.Join(expected, "\n")
		chunks = append(chunks, chunk{tc: tc})
	}
	return chunks
}

// runTestFile runs f on every case in path and compares its output with the
// expected one, or with -rewrite stores it as the new expected output.
func runTestFile(t *testing.T, path string, f func(t *testing.T, tc *testCase) string) {
	t.Helper()
	chunks := readTestFile(t, path)
	var out strings.Builder
	for _, c := range chunks {
		if c.tc == nil {
			out.WriteString(c.text + "\n")
			continue
		}
		tc := c.tc
		got := strings.TrimRight(f(t, tc), "\n")
		if *rewrite {
			out.WriteString(tc.header + "\n")
			if tc.input != "" {
				out.WriteString(tc.input + "\n")
			}
			out.WriteString("----\n")
			if got != "" {
				out.WriteString(got + "\n")
			}
			continue
		}
		if got != tc.expected {
			t.Errorf("%s: %s\n%s\ngot:\n%s\nwant:\n%s", tc, tc.cmd, tc.input, got, tc.expected)
		}
	}
	if *rewrite {
		if err := os.WriteFile(path, []byte(out.String()), 0o644); err != nil {
			t.Fatalf("rewrite test file: %v", err)
		}
	}
}

// testFiles lists the testdata files in dir.
func testFiles(tb testing.TB, dir string) []string {
	tb.Helper()
	paths, err := filepath.Glob(filepath.Join("testdata", dir, "*.txt"))
	if err != nil || len(paths) == 0 {
		tb.Fatalf("no test files in testdata/%s (%v)", dir, err)
	}
	return paths
}

func TestReadTestFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.txt")
	src := "# comment\n\nexpr a b\nline1\nline2\n----\nout1\nout2\n\nparse\n----\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	chunks := readTestFile(t, path)
	var cases []*testCase
	for _, c := range chunks {
		if c.tc != nil {
			cases = append(cases, c.tc)
		}
	}
	if len(cases) != 2 {
		t.Fatalf("got %d cases, want 2", len(cases))
	}
	c := cases[0]
	if c.cmd != "expr" || strings.Join(c.args, ",") != "a,b" || c.input != "line1\nline2" ||
		c.expected != "out1\nout2" || c.line != 3 {
		t.Errorf("case 1 = %+v", c)
	}
	if c := cases[1]; c.cmd != "parse" || c.input != "" || c.expected != "" || c.line != 10 {
		t.Errorf("case 2 = %+v", c)
	}
}
