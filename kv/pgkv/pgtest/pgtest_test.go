package pgtest

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	code := Run(m)
	if code == 0 {
		if err := goleak.Find(); err != nil {
			os.Stderr.WriteString("goleak: " + err.Error() + "\n")
			code = 1
		}
	}
	os.Exit(code)
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestSharedServer: the server runs PostgreSQL 15 or later with durable
// commits, and schemas and databases are fresh and usable.
func TestSharedServer(t *testing.T) {
	conn := connect(t, DSN(t))
	ctx := context.Background()
	settings := map[string]string{}
	for _, name := range []string{"fsync", "synchronous_commit", "server_version_num"} {
		var v string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			t.Fatal(err)
		}
		settings[name] = v
	}
	if os.Getenv(EnvURL) == "" && (settings["fsync"] != "on" || settings["synchronous_commit"] != "on") {
		t.Errorf("the server is not durable: %v", settings)
	}
	if settings["server_version_num"] < "150000" {
		t.Errorf("server version %s, want 15 or later", settings["server_version_num"])
	}

	a, b := Schema(t), Schema(t)
	if a == b {
		t.Fatalf("two schemas named %s", a)
	}
	for _, s := range []string{a, b} {
		if _, err := conn.Exec(ctx, "CREATE SCHEMA "+pgx.Identifier{s}.Sanitize()); err != nil {
			t.Fatalf("schema %s is not new: %v", s, err)
		}
	}

	db := connect(t, Database(t))
	var name string
	if err := db.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(name, shared.prefix) {
		t.Errorf("connected to database %s, want a fresh one", name)
	}
}

func TestWithDatabase(t *testing.T) {
	cases := []struct{ dsn, want string }{
		{"postgres://u:p@h:5/postgres?sslmode=disable", "postgres://u:p@h:5/db?sslmode=disable"},
		{"postgresql://h", "postgresql://h/db"},
		{"host=h user=u dbname=x", "host=h user=u dbname=x dbname=db"},
	}
	for _, c := range cases {
		if got := withDatabase(c.dsn, "db"); got != c.want {
			t.Errorf("withDatabase(%q) = %q, want %q", c.dsn, got, c.want)
		}
	}
	if got := redact("postgres://u:secret@h/db"); strings.Contains(got, "secret") {
		t.Errorf("redact left the password in %q", got)
	}
}

// TestStartStop: stop shuts down the server it started, removes its
// directory, and is safe to call twice.
func TestStartStop(t *testing.T) {
	if os.Getenv(EnvSkip) == "1" {
		t.Skipf("%s=1", EnvSkip)
	}
	s, err := start()
	if err != nil {
		t.Fatal(err)
	}
	connect(t, s.dsn).Close(context.Background())
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.exited:
	default:
		t.Error("postgres still running after stop")
	}
	if _, err := os.Stat(s.dir); !os.IsNotExist(err) {
		t.Errorf("%s still there after stop: %v", s.dir, err)
	}
	if err := s.stop(); err != nil {
		t.Errorf("second stop: %v", err)
	}
}
