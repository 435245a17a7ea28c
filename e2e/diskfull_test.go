package e2e

import (
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
)

// mountTmpfs mounts a tmpfs of size bytes on a fresh directory, unmounted
// when the test ends (after the servers it holds have stopped, since cleanups
// run last first), or skips the test where mounting is not possible.
func mountTmpfs(t *testing.T, size int64) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("a full disk end to end needs a small filesystem: mounting a tmpfs needs root (covered without one by kv/pebblekv's fault-injection tests)")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs here (%v: %s): the full-disk test needs one", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			// Still busy (a server of a failed test exiting): detach it
			// now, so that no mount outlives the test.
			if lout, lerr := exec.Command("umount", "-l", dir).CombinedOutput(); lerr != nil {
				t.Errorf("umount %s: %v: %s; lazily: %v: %s", dir, err, out, lerr, lout)
			}
		}
	})
	return dir
}

// resizeTmpfs grows or shrinks the tmpfs mounted on dir.
func resizeTmpfs(t *testing.T, dir string, size int64) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", fmt.Sprintf("remount,size=%d", size), dir).CombinedOutput(); err != nil {
		t.Fatalf("resize the tmpfs: %v: %s", err, out)
	}
}

// isStorageQuota403 reports whether err is Cosmos DB's answer to an
// exhausted storage quota.
func isStorageQuota403(err error) bool {
	var re *azcore.ResponseError
	return errors.As(err, &re) && re.StatusCode == 403 && strings.Contains(err.Error(), "Storage quota for 'Document' exceeded.")
}

// waitMetric waits until the server's metric with labels has value want.
func waitMetric(t *testing.T, s *server, name string, labels map[string]string, want float64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		v, ok := seriesValue(scrape(t, s), name, labels)
		if ok && v == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s%v is %v (present: %v), want %v\n%s", name, labels, v, ok, want, s.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestDiskFull fills a 40 MB filesystem through the Go SDK, as an operator
// might by accident: the server refuses further creates with the 403 of an
// exhausted storage quota and keeps serving reads, queries, deletes and
// metrics; the filesystem grows and creates succeed again without a restart.
// Then, stopped and started again on a disk filled to the last byte by
// something else, it comes up read-only, serves reads, refuses writes, and
// takes them again once the space is given back. Nothing acknowledged is
// lost at any point.
func TestDiskFull(t *testing.T) {
	const size = 40 << 20
	mnt := mountTmpfs(t, size)
	dataDir := filepath.Join(mnt, "data")
	s := startServer(t, serverOpts{DataDir: dataDir, Args: []string{"--disk-reserve", "auto"}})
	cc := mustContainer(t, mustDatabase(t, s.client(t), "db"), azcosmos.ContainerProperties{
		ID: "c", PartitionKeyDefinition: azcosmos.PartitionKeyDefinition{Paths: []string{"/pk"}}})
	// 4 KB of random text each, which compression cannot shrink.
	rng := rand.New(rand.NewPCG(1, 2))
	raw := make([]byte, 3072)
	pk := azcosmos.NewPartitionKeyString("p")
	var acked []string
	create := func(id string) error {
		for i := range raw {
			raw[i] = byte(rng.Uint32())
		}
		pad := base64.StdEncoding.EncodeToString(raw)
		_, err := cc.CreateItem(ctx, pk, []byte(fmt.Sprintf(`{"id":%q,"pk":"p","pad":%q}`, id, pad)), nil)
		return err
	}
	var refusal error
	for i := 0; i < 20000 && refusal == nil; i++ {
		id := fmt.Sprintf("d%05d", i)
		if err := create(id); err != nil {
			refusal = err
			break
		}
		acked = append(acked, id)
	}
	if !isStorageQuota403(refusal) {
		t.Fatalf("after %d creates of 4 KB on a 40 MB filesystem: %v, want the 403 of an exhausted storage quota\n%s", len(acked), refusal, s.stderr)
	}
	t.Logf("%d documents of 4 KB acknowledged before the disk filled", len(acked))
	// The refusal is counted. (Whether the server refuses still, a moment
	// later, depends on what its flushes free meanwhile.)
	if v, _ := seriesValue(scrape(t, s), "lethe_writes_refused_total", map[string]string{"reason": "disk_low"}); v < 1 {
		t.Errorf("lethe_writes_refused_total{reason=disk_low} = %v after a refusal", v)
	}

	// Another process takes what is left: the server stays up, refuses
	// creates, and serves reads, queries and deletes.
	// Once the server has released its ballast for the deletes, exactly
	// 15 MiB are left free: under the 16 MiB reserve (low), with room for
	// the deletes and for the compactions the writes left to do. One of
	// those may rewrite every document at once (12-14 MB), beside its
	// inputs: with only the released ballast's 8 MiB free it failed for want
	// of space again and again, every failure marking the disk full, and the
	// server never left that state. Free space stays well under the level at
	// which the server takes its ballast back. The server's own files may
	// shrink meanwhile (a flush ends and its write-ahead log goes), so the
	// other process takes what they free again, or the filesystem grows,
	// until the server reports the disk low (holdLow).
	filler := filepath.Join(mnt, "filler")
	fillDisk(t, filler, 0)
	waitMetric(t, s, "lethe_disk_ballast_bytes", nil, 0)
	holdLow(t, s, mnt, filler, 15<<20)
	// A write of the store's own that met the full disk a moment ago may
	// still be on its way through; until then every write is refused.
	waitMetric(t, s, "lethe_writes_refused", map[string]string{"reason": "disk_full"}, 0)
	if err := create("refused"); !isStorageQuota403(err) {
		t.Errorf("a create on a full disk: %v, want the 403", err)
	}
	if _, err := cc.ReadItem(ctx, pk, acked[len(acked)/2], nil); err != nil {
		t.Errorf("read on a full disk: %v", err)
	}
	if n := countItems(t, cc, "SELECT VALUE COUNT(1) FROM c"); n != len(acked) {
		t.Errorf("count on a full disk: %d, want %d", n, len(acked))
	}
	// A delete is served while the disk is low; at an instant when it is
	// exhausted (a compaction took the last megabyte), it gets the same 403,
	// never a 5xx or a hang.
	switch _, err := cc.DeleteItem(ctx, pk, acked[0], nil); {
	case err == nil:
		acked = acked[1:]
	case !isStorageQuota403(err):
		t.Errorf("delete on a full disk: %v", err)
	}

	// More space: creates succeed again by themselves.
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	resizeTmpfs(t, mnt, 3*size)
	waitMetric(t, s, "lethe_writes_refused", map[string]string{"reason": "disk_full"}, 0)
	waitMetric(t, s, "lethe_writes_refused", map[string]string{"reason": "disk_low"}, 0)
	if err := create("after-growth"); err != nil {
		t.Fatalf("a create after the filesystem grew: %v\n%s", err, s.stderr)
	}
	acked = append(acked, "after-growth")
	fams := scrape(t, s)
	bg, _ := seriesValue(fams, "lethe_store_background_errors_total", nil)
	t.Logf("%v flushes or compactions gave up for lack of space (each after waiting for it)", bg)
	if v, _ := seriesValue(fams, "lethe_disk_reserve_bytes", nil); v != 16<<20 {
		t.Errorf("lethe_disk_reserve_bytes = %v, want 16 MiB: the default for a 40 MB filesystem", v)
	}

	// Stop, fill the disk to the last byte from outside (the ballast gone
	// too, as if the server had never had room for one), start again.
	s.stop(t)
	resizeTmpfs(t, mnt, size)
	if err := os.Remove(filepath.Join(dataDir, "LETHE-BALLAST")); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("remove the ballast: %v", err) // (it may not have been recreated yet)
	}
	fillDisk(t, filler, 0)
	s = startServer(t, serverOpts{DataDir: dataDir, Args: []string{"--disk-reserve", "auto"}})
	cc, err := s.client(t).NewContainer("db", "c")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{acked[0], acked[len(acked)-1]} {
		if _, err := cc.ReadItem(ctx, pk, id, nil); err != nil {
			t.Errorf("read %s after starting on a full disk: %v\n%s", id, err, s.stderr)
		}
	}
	if err := create("refused"); !isStorageQuota403(err) {
		t.Errorf("a create on a disk full from the start: %v, want the 403", err)
	}
	if _, err := cc.DeleteItem(ctx, pk, acked[0], nil); !isStorageQuota403(err) {
		t.Errorf("a delete on a disk full to the last byte: %v, want the 403 (nothing can be written)", err)
	}
	// Space given back: the filler goes and the filesystem grows, as in the
	// first part. Removing the filler alone may leave less than the 16 MiB
	// reserve: how much the documents take depends on how many were
	// acknowledged before the first refusal (3,449-5,207 in runs so far).
	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	resizeTmpfs(t, mnt, 3*size)
	waitMetric(t, s, "lethe_writes_refused", map[string]string{"reason": "disk_full"}, 0)
	waitMetric(t, s, "lethe_writes_refused", map[string]string{"reason": "disk_low"}, 0)
	if err := create("after-restart"); err != nil {
		t.Fatalf("a create once space was given back: %v\n%s", err, s.stderr)
	}
	acked = append(acked, "after-restart")
	if n := countItems(t, cc, "SELECT VALUE COUNT(1) FROM c"); n != len(acked) {
		t.Errorf("%d documents at the end, want the %d acknowledged", n, len(acked))
	}
}

// holdLow leaves free bytes free on the tmpfs at mnt, writing more to filler
// or growing the filesystem, until the server s reports the disk low: a
// process that takes whatever the server's own files give back.
func holdLow(t *testing.T, s *server, mnt, filler string, free int64) {
	t.Helper()
	low := map[string]string{"reason": "disk_low"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		leaveFree(t, mnt, filler, free)
		if v, ok := seriesValue(scrape(t, s), "lethe_writes_refused", low); ok && v == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("lethe_writes_refused%v is not 1 with %d bytes free\n%s", low, free, s.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// leaveFree makes free bytes free on the tmpfs at mnt: it grows the
// filesystem when fewer are, and writes the excess to filler when more are.
func leaveFree(t *testing.T, mnt, filler string, free int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(mnt, &st); err != nil {
		t.Fatal(err)
	}
	total, avail := int64(st.Blocks)*st.Bsize, int64(st.Bavail)*st.Bsize
	switch {
	case avail < free:
		resizeTmpfs(t, mnt, total+free-avail)
	case avail > free:
		fillDisk(t, filler, free)
	}
}

// fillDisk appends to the file path until the filesystem has only leave
// bytes free, or none.
func fillDisk(t *testing.T, path string, leave int64) {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(filepath.Dir(path), &st); err != nil {
		t.Fatal(err)
	}
	want := int64(st.Bavail)*st.Bsize - leave
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 64<<10)
	for written := int64(0); leave == 0 || written < want; written += int64(len(block)) {
		if leave > 0 {
			block = block[:min(int64(len(block)), want-written)]
		}
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling the disk: %v", err)
			}
			return
		}
	}
}

// countItems runs a COUNT query in partition p and returns its value.
func countItems(t *testing.T, cc *azcosmos.ContainerClient, query string) int {
	t.Helper()
	pager := cc.NewQueryItemsPager(query, azcosmos.NewPartitionKeyString("p"), nil)
	total := 0
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		for _, it := range page.Items {
			var n int
			if _, err := fmt.Sscan(string(it), &n); err != nil {
				t.Fatalf("%s: item %s", query, it)
			}
			total += n
		}
	}
	return total
}
