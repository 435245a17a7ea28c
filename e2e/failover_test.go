package e2e

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"

	"github.com/lethe-db/lethe/kv/pgkv/pgtest"
)

// pgNode is one PostgreSQL server of the failover test, run with pg_ctl (as
// the postgres user when the test runs as root).
type pgNode struct {
	t    *testing.T
	dir  string
	port int
	as   []string // the runuser prefix, or none
}

func (n *pgNode) run(name string, args ...string) string {
	n.t.Helper()
	cmd := exec.Command(name, args...)
	if len(n.as) > 0 {
		cmd = exec.Command(n.as[0], append(append(n.as[1:], name), args...)...)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		n.t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (n *pgNode) psql(sql string) string {
	n.t.Helper()
	return strings.TrimSpace(n.run("psql", "-h", "127.0.0.1", "-p", strconv.Itoa(n.port), "-U", "postgres", "-d", "postgres", "-tAq", "-c", sql))
}

func freeTCPPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestPostgresFailover: a Lethe on a PostgreSQL primary with a synchronous
// streaming standby, through a multi-host URL with
// target_session_attrs=read-write. Writers create documents through the Go
// SDK; the primary is killed (immediate shutdown) and the standby promoted.
// The gateway carries on on the new primary by itself; a request during the
// switch fails, if at all, with a 503 (never a 500, never a wrong answer);
// and every create acknowledged before, during or after the switch is there
// afterwards.
func TestPostgresFailover(t *testing.T) {
	if os.Getenv(pgtest.EnvSkip) == "1" {
		t.Skipf("%s=1", pgtest.EnvSkip)
	}
	for _, b := range []string{"initdb", "pg_ctl", "pg_basebackup", "psql"} {
		if _, err := exec.LookPath(b); err != nil {
			t.Fatalf("%s is not on the PATH: install PostgreSQL 15 or later", b)
		}
	}
	t.Parallel()
	root, err := os.MkdirTemp("", "lethe-failover-")
	if err != nil {
		t.Fatal(err)
	}
	var as []string
	if os.Getuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root needs the postgres user: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(root, uid, gid); err != nil {
			t.Fatal(err)
		}
		as = []string{"runuser", "-u", "postgres", "--"}
	}
	primary := &pgNode{t: t, dir: filepath.Join(root, "primary"), port: freeTCPPort(t), as: as}
	standby := &pgNode{t: t, dir: filepath.Join(root, "standby"), port: freeTCPPort(t), as: as}
	t.Cleanup(func() {
		for _, n := range []*pgNode{standby, primary} {
			cmd := exec.Command("pg_ctl", "-D", n.dir, "-m", "immediate", "stop")
			if len(as) > 0 {
				cmd = exec.Command(as[0], append(append(as[1:], "pg_ctl"), "-D", n.dir, "-m", "immediate", "stop")...)
			}
			_ = cmd.Run() // already stopped, or never started
		}
		os.RemoveAll(root)
	})
	start := func(n *pgNode) {
		n.run("pg_ctl", "-D", n.dir, "-l", n.dir+".log", "-w", "-o",
			fmt.Sprintf("-c listen_addresses=127.0.0.1 -p %d -k %s", n.port, root), "start")
	}

	primary.run("initdb", "-D", primary.dir, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8")
	conf := "\nsynchronous_standby_names = '*'\nsynchronous_commit = on\nwal_level = replica\nmax_wal_senders = 4\n"
	if err := appendFile(filepath.Join(primary.dir, "postgresql.conf"), conf); err != nil {
		t.Fatal(err)
	}
	start(primary)
	primary.run("pg_basebackup", "-h", "127.0.0.1", "-p", strconv.Itoa(primary.port), "-U", "postgres", "-D", standby.dir, "-R", "-X", "stream")
	// The copy has the primary's settings: promoted, it must not wait for a
	// synchronous standby of its own, which it will not have.
	if err := appendFile(filepath.Join(standby.dir, "postgresql.auto.conf"), "\nsynchronous_standby_names = ''\n"); err != nil {
		t.Fatal(err)
	}
	start(standby)
	for deadline := time.Now().Add(30 * time.Second); primary.psql("SELECT sync_state FROM pg_stat_replication") != "sync"; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the standby did not become a synchronous replica")
		}
	}
	primary.psql("CREATE DATABASE lethe")

	dsn := fmt.Sprintf("postgres://postgres@127.0.0.1:%d,127.0.0.1:%d/lethe?target_session_attrs=read-write&sslmode=disable", primary.port, standby.port)
	s := startServer(t, serverOpts{Store: dsn})
	cc := mustContainer(t, mustDatabase(t, s.client(t), "db"), pkContainer("c", nil))

	var (
		mu       sync.Mutex
		acked    []string
		badErrs  []string
		failures atomic.Int64
		stop     atomic.Bool
		wg       sync.WaitGroup
		ackedN   atomic.Int64
	)
	for w := range 4 {
		wg.Go(func() {
			pk := azcosmos.NewPartitionKeyString(fmt.Sprintf("w%d", w))
			for i := 0; !stop.Load(); i++ {
				id := fmt.Sprintf("w%d-%05d", w, i)
				_, err := cc.CreateItem(ctx, pk, fmt.Appendf(nil, `{"id":%q,"pk":"w%d"}`, id, w), nil)
				switch st := statusOf(err); {
				case err == nil:
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
					ackedN.Add(1)
				case st == http.StatusServiceUnavailable:
					failures.Add(1)
				case st == http.StatusConflict:
					// A create retried by the SDK after a 503 whose commit had
					// in fact happened: it was applied (checked below).
					mu.Lock()
					acked = append(acked, id)
					mu.Unlock()
				default:
					mu.Lock()
					badErrs = append(badErrs, fmt.Sprintf("%s: %v", id, err))
					mu.Unlock()
				}
			}
		})
	}
	waitAcked := func(n int64, what string) {
		t.Helper()
		for deadline := time.Now().Add(time.Minute); ackedN.Load() < n; time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				stop.Store(true)
				wg.Wait()
				t.Fatalf("%s: %d creates acknowledged in a minute; errors %v\n%s", what, ackedN.Load(), badErrs, s.stderr)
			}
		}
	}
	waitAcked(200, "before the failover")
	// The primary dies as in a crash; the standby is promoted.
	primary.run("pg_ctl", "-D", primary.dir, "-m", "immediate", "stop")
	standby.run("pg_ctl", "-D", standby.dir, "-w", "promote")
	waitAcked(ackedN.Load()+200, "after the failover")
	stop.Store(true)
	wg.Wait()

	if len(badErrs) > 0 {
		t.Errorf("errors other than 503 during the failover: %v", badErrs)
	}
	stored := map[string]bool{}
	for _, d := range s.readFeedAllDocs(t, "db", "c") {
		stored[d["id"].(string)] = true
	}
	lost := 0
	for _, id := range acked {
		if !stored[id] {
			lost++
			if lost <= 5 {
				t.Errorf("acknowledged create %s is gone after the failover", id)
			}
		}
	}
	t.Logf("%d creates acknowledged across the failover, %d requests answered 503, %d lost", len(acked), failures.Load(), lost)
}

// appendFile appends text to a file (the test runs as root or as the
// file's owner: either may).
func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = f.WriteString(text)
	return err
}
