package main

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lethe-db/lethe/engine"
	"github.com/lethe-db/lethe/purgectl"
)

// runCLI runs one command line as main does and returns its exit code and output.
func runCLI(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = runMain(args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestHelp: every way of asking for help prints the usage on stdout, nothing
// on stderr, and exits 0.
func TestHelp(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the usage's first line
	}{
		{[]string{"help"}, "Lethe: a Cosmos DB-compatible document server"},
		{[]string{"-h"}, "Lethe: a Cosmos DB-compatible document server"},
		{[]string{"--help"}, "Lethe: a Cosmos DB-compatible document server"},
		{[]string{"serve", "-h"}, "Usage: lethe serve [flags]"},
		{[]string{"serve", "--help"}, "Usage: lethe serve [flags]"},
		{[]string{"serve", "--in-memory", "-help"}, "Usage: lethe serve [flags]"},
		{[]string{"help", "serve"}, "Usage: lethe serve [flags]"},
		{[]string{"bench", "-h"}, "Usage: lethe bench [flags]"},
		{[]string{"bench", "--help"}, "Usage: lethe bench [flags]"},
		{[]string{"help", "bench"}, "Usage: lethe bench [flags]"},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		if code != 0 || stderr != "" {
			t.Errorf("lethe %s: exit %d, stderr %q; want exit 0 and nothing on stderr", strings.Join(tc.args, " "), code, stderr)
		}
		if first, _, _ := strings.Cut(stdout, "\n"); !strings.HasPrefix(first, tc.want) {
			t.Errorf("lethe %s: stdout starts %q, want %q", strings.Join(tc.args, " "), first, tc.want)
		}
	}
}

// TestServeUsageNamesEveryEnvVar: serve's usage lists every flag, each with
// its environment variable (LETHE_ and the flag's name in capitals), and never
// prints the master key, even one set in the environment.
func TestServeUsageNamesEveryEnvVar(t *testing.T) {
	t.Setenv("LETHE_KEY", "c2VjcmV0")
	_, stdout, _ := runCLI(t, "serve", "-h")
	flags := 0
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		name, ok := strings.CutPrefix(sc.Text(), "  -")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, " ")
		flags++
		if !sc.Scan() {
			t.Fatalf("flag -%s has no description", name)
		}
		env := "(LETHE_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_")) + ")"
		if !strings.Contains(sc.Text(), env) {
			t.Errorf("flag -%s: description %q does not name %s", name, sc.Text(), env)
		}
	}
	if flags < 14 || !strings.Contains(stdout, "  -cpuprofile string") {
		t.Errorf("usage lists %d flags (want at least 14, -cpuprofile among them):\n%s", flags, stdout)
	}
	if strings.Contains(stdout, "c2VjcmV0") || strings.Contains(stdout, EmulatorKey) {
		t.Errorf("usage prints a key:\n%s", stdout)
	}
}

// TestMisuse: a command line that cannot be run exits 2, prints nothing on
// stdout, and reports the problem once on stderr, with the usage or a pointer
// to it.
func TestMisuse(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // on stderr, each exactly once
	}{
		{nil, []string{"Usage:\n  lethe serve"}},
		{[]string{"bogus"}, []string{`lethe: unknown command "bogus"`, "Usage:\n  lethe serve"}},
		{[]string{"help", "bogus"}, []string{`lethe: no help on "bogus"`, "Usage:\n  lethe serve"}},
		{[]string{"version", "now"}, []string{"lethe: version takes no arguments", "Run 'lethe -h' for usage."}},
		{[]string{"serve", "--bogus"}, []string{"lethe serve: flag provided but not defined: -bogus", "Run 'lethe serve -h' for usage."}},
		{[]string{"serve", "--metrics=maybe"}, []string{`lethe serve: invalid boolean value "maybe" for -metrics`, "Run 'lethe serve -h' for usage."}},
		{[]string{"serve", "--clock", "sundial", "--log-format", "xml"}, []string{`lethe serve: --log-format "xml" is not text or json`, `--clock "sundial" is not wall or manual`, "Run 'lethe serve -h' for usage."}},
		{[]string{"serve", "now"}, []string{"lethe serve: unexpected arguments: now", "Run 'lethe serve -h' for usage."}},
		{[]string{"serve", "--purge-target-age", "500ms", "--purge-max-share", "2"}, []string{`lethe serve: --purge-target-age "500ms" is not a duration over 1s`, `--purge-max-share "2" is not a share of a core between 0.06 and 1`, "Run 'lethe serve -h' for usage."}},
		{[]string{"serve", "--max-storage", "10XB", "--disk-reserve", "lots", "--slow-disk-threshold", "0s", "--shutdown-timeout", "-1s"}, []string{`lethe serve: --max-storage: "10XB" is not a size in bytes`, `--disk-reserve: "lots" is not a size in bytes (like 512MiB or 10GB), auto or off`, `--slow-disk-threshold "0s" is not a positive duration`, `--shutdown-timeout "-1s" is not a positive duration`, "Run 'lethe serve -h' for usage."}},
		{[]string{"serve", "--cache-size", "0"}, []string{`lethe serve: --cache-size "0" is not a positive size in bytes (like 64MiB) or auto`, "Run 'lethe serve -h' for usage."}},
		{[]string{"serve", "--lookup-cache", "lots"}, []string{`lethe serve: --lookup-cache "lots" is not a size in bytes (like 32MiB), auto or off`, "Run 'lethe serve -h' for usage."}},
		{[]string{"bench", "--bogus"}, []string{"lethe bench: flag provided but not defined: -bogus", "Run 'lethe bench -h' for usage."}},
		{[]string{"bench", "--workload", "scan"}, []string{`"scan"`, "Run 'lethe bench -h' for usage."}},
	} {
		code, stdout, stderr := runCLI(t, tc.args...)
		line := "lethe " + strings.Join(tc.args, " ")
		if code != exitUsage || stdout != "" {
			t.Errorf("%s: exit %d, stdout %q; want exit 2 and nothing on stdout", line, code, stdout)
		}
		for _, w := range tc.want {
			if n := strings.Count(stderr, w); n != 1 {
				t.Errorf("%s: stderr has %q %d times, want once:\n%s", line, w, n, stderr)
			}
		}
		if strings.Contains(stderr, "Usage of") || strings.Count(stderr, "not defined") > 1 {
			t.Errorf("%s: the flag package's own report leaked:\n%s", line, stderr)
		}
	}
}

// TestRunFailureExits1: a command line that parses but whose run fails (here
// the listen) exits 1 with the error on stderr, told apart from misuse.
func TestRunFailureExits1(t *testing.T) {
	code, stdout, stderr := runCLI(t, "serve", "--in-memory", "--log-level", "error", "--addr", "127.0.0.1:-1")
	if code != exitFailure || stdout != "" || !strings.HasPrefix(stderr, "lethe: listen on 127.0.0.1:-1: ") {
		t.Errorf("exit %d, stdout %q, stderr %q; want exit 1 and the listen error", code, stdout, stderr)
	}
}

// TestVersion: lethe version prints one line on stdout and exits 0.
func TestVersion(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		code, stdout, stderr := runCLI(t, arg)
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "lethe ") || strings.Count(stdout, "\n") != 1 {
			t.Errorf("lethe %s: exit %d, stdout %q, stderr %q", arg, code, stdout, stderr)
		}
	}
}

// TestProfileFlags: --cpuprofile and --memprofile can be set with
// LETHE_CPUPROFILE and LETHE_MEMPROFILE, and the flag wins over the
// environment.
func TestProfileFlags(t *testing.T) {
	for _, tc := range []struct {
		flag, env string
		get       func(*config) string
	}{
		{"--cpuprofile", "LETHE_CPUPROFILE", func(c *config) string { return c.cpuProfile }},
		{"--memprofile", "LETHE_MEMPROFILE", func(c *config) string { return c.memProfile }},
	} {
		t.Setenv(tc.env, "env.prof")
		c, err := parseServeFlags(nil, nil)
		if err != nil || tc.get(c) != "env.prof" {
			t.Fatalf("%s from the environment: %+v, %v", tc.env, c, err)
		}
		c, err = parseServeFlags([]string{tc.flag, "flag.prof"}, nil)
		if err != nil || tc.get(c) != "flag.prof" {
			t.Fatalf("%s over the environment: %+v, %v", tc.flag, c, err)
		}
	}
}

// TestHeapProfile: what --memprofile writes is a heap profile.
func TestHeapProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.prof")
	if err := writeHeapProfile(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A profile is gzipped protocol buffers.
	if len(b) < 100 || b[0] != 0x1f || b[1] != 0x8b {
		t.Fatalf("heap profile of %d bytes, starting % x: not a gzipped profile", len(b), b[:min(len(b), 4)])
	}
	if err := writeHeapProfile(filepath.Join(t.TempDir(), "no", "such", "dir")); err == nil {
		t.Fatal("writing into a missing directory succeeded")
	}
}

// TestPurgeControlFlags: the purge controller's settings come from the
// flags or the environment (the flag wins), and default to purgectl's.
func TestPurgeControlFlags(t *testing.T) {
	c, err := parseServeFlags(nil, nil)
	if err != nil || c.purge.TargetAge != purgectl.DefaultTargetAge || c.purge.MaxShare != purgectl.DefaultMaxShare {
		t.Fatalf("defaults: %+v, %v", c.purge, err)
	}
	t.Setenv("LETHE_PURGE_TARGET_AGE", "8s")
	t.Setenv("LETHE_PURGE_MAX_SHARE", "0.25")
	c, err = parseServeFlags(nil, nil)
	if err != nil || c.purge.TargetAge != 8*time.Second || c.purge.MaxShare != 0.25 {
		t.Fatalf("from the environment: %+v, %v", c.purge, err)
	}
	c, err = parseServeFlags([]string{"--purge-target-age", "2s", "--purge-max-share", "1"}, nil)
	if err != nil || c.purge.TargetAge != 2*time.Second || c.purge.MaxShare != 1 {
		t.Fatalf("flags over the environment: %+v, %v", c.purge, err)
	}
}

// TestStorageFlags: sizes in bytes or with decimal or binary units, from the
// flags or the environment (the flag wins); the disk reserve's auto and off.
func TestStorageFlags(t *testing.T) {
	c, err := parseServeFlags(nil, nil)
	if err != nil || c.maxStorageBytes != 0 || c.diskReserveBytes != 0 || c.cacheBytes != 0 || c.shutdownWait != 30*time.Second || c.slowDiskThreshold != 5*time.Second {
		t.Fatalf("defaults: %+v, %v", c, err)
	}
	t.Setenv("LETHE_MAX_STORAGE", "10GB")
	t.Setenv("LETHE_DISK_RESERVE", "off")
	t.Setenv("LETHE_CACHE_SIZE", "16MiB")
	c, err = parseServeFlags(nil, nil)
	if err != nil || c.maxStorageBytes != 10e9 || c.diskReserveBytes != -1 || c.cacheBytes != 16<<20 {
		t.Fatalf("from the environment: %d, %d, %d, %v", c.maxStorageBytes, c.diskReserveBytes, c.cacheBytes, err)
	}
	c, err = parseServeFlags([]string{"--max-storage", "512MiB", "--disk-reserve", "64m", "--shutdown-timeout", "5s", "--cache-size", "auto"}, nil)
	if err != nil || c.maxStorageBytes != 512<<20 || c.diskReserveBytes != 64<<20 || c.shutdownWait != 5*time.Second || c.cacheBytes != 0 {
		t.Fatalf("flags over the environment: %d, %d, %v, %d, %v", c.maxStorageBytes, c.diskReserveBytes, c.shutdownWait, c.cacheBytes, err)
	}
	// --lookup-cache: auto (-1, decided by --in-memory), off, or a size.
	for in, want := range map[string]int64{"": -1, "auto": -1, "off": 0, "0": 0, "16MiB": 16 << 20} {
		args := []string{"--lookup-cache", in}
		if in == "" {
			args = nil
		}
		if c, err := parseServeFlags(args, nil); err != nil || c.lookupCacheBytes != want {
			t.Errorf("--lookup-cache %q: %d, %v; want %d", in, c.lookupCacheBytes, err, want)
		}
	}
	for in, want := range map[string]int64{"0": 0, "1048576": 1 << 20, "1kb": 1000, "1 KiB": 1024, "2G": 2 << 30, "3TB": 3e12, "7b": 7} {
		if got, err := parseSize(in); err != nil || got != want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5GB", "GB", "9999999999TiB"} {
		if got, err := parseSize(in); err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
		}
	}
}

// TestStoreFlag: --store takes a PostgreSQL URL (from the flag or
// LETHE_STORE), refuses anything else and --in-memory beside it, and never
// repeats the URL's password in its messages.
func TestStoreFlag(t *testing.T) {
	c, err := parseServeFlags(nil, nil)
	if err != nil || c.storeURL != "" {
		t.Fatalf("default: %q, %v", c.storeURL, err)
	}
	t.Setenv("LETHE_STORE", "postgres://lethe:s3cret@db:5432/lethe")
	if c, err = parseServeFlags(nil, nil); err != nil || c.storeURL != "postgres://lethe:s3cret@db:5432/lethe" || dataDirLabel(c) != "postgres://lethe:xxxxx@db:5432/lethe" {
		t.Fatalf("from the environment: %q (%s), %v", c.storeURL, dataDirLabel(c), err)
	}
	for _, args := range [][]string{
		{"--store", "mysql://lethe:s3cret@db/lethe"},
		{"--store", "postgresql://lethe:s3cret@db/lethe", "--in-memory"},
	} {
		_, err := parseServeFlags(args, nil)
		if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "--store") && !strings.Contains(err.Error(), "--in-memory") {
			t.Errorf("%v: %v", args, err)
		}
	}
}

func TestWritersFlag(t *testing.T) {
	c, err := parseServeFlags(nil, nil)
	if err != nil || c.writersN != engine.DefaultWriters {
		t.Fatalf("default: %d, %v", c.writersN, err)
	}
	t.Setenv("LETHE_WRITERS", "2")
	if c, err = parseServeFlags(nil, nil); err != nil || c.writersN != 2 {
		t.Fatalf("from the environment: %d, %v", c.writersN, err)
	}
	if c, err = parseServeFlags([]string{"--writers", "8"}, nil); err != nil || c.writersN != 8 {
		t.Fatalf("--writers 8: %d, %v", c.writersN, err)
	}
	for _, v := range []string{"0", "-1", "65", "four", ""} {
		if _, err := parseServeFlags([]string{"--writers", v}, nil); err == nil || !strings.Contains(err.Error(), "--writers") {
			t.Errorf("--writers %q: %v", v, err)
		}
	}
}
