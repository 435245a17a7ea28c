package pebblekv

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// TestWALFillKeepsLogsWrittenAhead: a log's appends land within blocks
// already written, a step ahead; a reused log counts its old size as
// written; other files are left as they are written.
func TestWALFillKeepsLogsWrittenAhead(t *testing.T) {
	dir := t.TempDir()
	fs := walFillFS{FS: vfs.Default}
	size := func(name string) int64 {
		t.Helper()
		st, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	write := func(f vfs.File, p []byte) {
		t.Helper()
		if n, err := f.Write(p); err != nil || n != len(p) {
			t.Fatalf("write: %d, %v", n, err)
		}
	}

	log, err := fs.Create(filepath.Join(dir, "000001.log"), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	first := bytes.Repeat([]byte{'a'}, 100)
	write(log, first)
	if got := size("000001.log"); got != walFillStep {
		t.Errorf("after a 100-byte append the log is %d bytes, want one step (%d)", got, walFillStep)
	}
	// An append that crosses the step's end fills to the step past it first.
	second := bytes.Repeat([]byte{'b'}, walFillStep)
	write(log, second)
	if got := size("000001.log"); got != 2*walFillStep {
		t.Errorf("after appends to %d bytes the log is %d bytes, want %d", 100+walFillStep, got, 2*walFillStep)
	}
	if err := log.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(filepath.Join(dir, "000001.log"))
	if err != nil {
		t.Fatal(err)
	}
	want := append(append(append([]byte(nil), first...), second...), make([]byte, 2*walFillStep-len(first)-len(second))...)
	if !bytes.Equal(got, want) {
		t.Error("the log does not read as its appends followed by zeros")
	}

	// A write elsewhere is never cleared by a later fill.
	at, err := fs.Create(filepath.Join(dir, "000004.log"), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := at.WriteAt([]byte("far"), walFillStep/2); err != nil {
		t.Fatal(err)
	}
	write(at, first)
	if err := at.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "000004.log"))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b[walFillStep/2:]); got != "far" {
		t.Errorf("a write at %d reads back as %q after a fill", walFillStep/2, got)
	}

	// Reused: its two steps are written already, so appends within them
	// leave its size alone.
	reused, err := fs.ReuseForWrite(filepath.Join(dir, "000001.log"), filepath.Join(dir, "000002.log"), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	write(reused, bytes.Repeat([]byte{'c'}, 2*walFillStep))
	if got := size("000002.log"); got != 2*walFillStep {
		t.Errorf("a reused log of %d bytes is %d after appends within it", 2*walFillStep, got)
	}
	if err := reused.Close(); err != nil {
		t.Fatal(err)
	}

	table, err := fs.Create(filepath.Join(dir, "000003.sst"), vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	write(table, first)
	if err := table.Close(); err != nil {
		t.Fatal(err)
	}
	if got := size("000003.sst"); got != int64(len(first)) {
		t.Errorf("a table of 100 bytes is %d bytes: only logs are filled", got)
	}
}

// TestStoreLogsAreFilled: a store on disk writes its log within blocks
// written ahead, and reads its data back after a restart, whose log replay
// meets the zeroed tail. (TestKillDurability and TestCrashDurability check
// the tail after a kill and a power loss.)
func TestStoreLogsAreFilled(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		key := "k" + strings.Repeat("x", i)
		if err := putErr(s, key, key); err != nil {
			t.Fatal(err)
		}
	}
	logs, err := filepath.Glob(filepath.Join(dir, "*.log"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no log in %s (%v)", dir, err)
	}
	for _, name := range logs {
		st, err := os.Stat(name)
		if err != nil {
			t.Fatal(err)
		}
		if st.Size() < walFillStep || st.Size()%walFillStep != 0 {
			t.Errorf("log %s is %d bytes, want whole steps of %d", filepath.Base(name), st.Size(), walFillStep)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i := range 100 {
		key := "k" + strings.Repeat("x", i)
		checkValue(t, s, key, key)
	}
}

// TestCrashKeepingSomeUnsyncedWrites: power losses that keep a random part
// of what was written but not synced (appends, and the zeros of fills) lose
// no acknowledged write, and the store opens after each: whatever a torn
// log's tail holds, its replay stops there cleanly. TestCrashDurability
// keeps exactly the synced data.
func TestCrashKeepingSomeUnsyncedWrites(t *testing.T) {
	fs := vfs.NewCrashableMem()
	s, err := open(Options{Dir: "/db"}, fs)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type crash struct {
		fs    *vfs.MemFS
		acked []string
	}
	var (
		mu      sync.Mutex
		acked   []string
		crashes []crash
		wg      sync.WaitGroup
	)
	rng := rand.New(rand.NewPCG(1, 2))
	const writers, perWriter = 4, 300
	for w := range writers {
		wg.Go(func() {
			for i := range perWriter {
				key := fmt.Sprintf("w%d/%03d", w, i)
				if err := putErr(s, key, crashValue(key)); err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				acked = append(acked, key)
				if len(acked)%150 == 0 {
					percent := []int{10, 50, 90}[len(crashes)%3]
					crashes = append(crashes, crash{
						fs:    fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: percent, RNG: rng}),
						acked: append([]string(nil), acked...),
					})
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(crashes) < 6 {
		t.Fatalf("%d crashes taken", len(crashes))
	}
	for i, c := range crashes {
		s, err := open(Options{Dir: "/db"}, c.fs)
		if err != nil {
			t.Fatalf("crash %d (%d writes acknowledged): open: %v", i, len(c.acked), err)
		}
		for _, k := range c.acked {
			checkValue(t, s, k, crashValue(k))
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

// crashValue is the value TestCrashKeepingSomeUnsyncedWrites writes under
// key: 2-4 KB, told by the key alone, so that the log crosses several fill
// steps.
func crashValue(key string) string {
	return strings.Repeat(key, 300+int(crc32.ChecksumIEEE([]byte(key))%300))
}
