package engine

import (
	"os"
	"testing"

	"github.com/lethe-db/lethe/kv/pgkv/pgtest"
)

// TestMain fails the package if any test leaves a goroutine running: the purger
// must stop when its engine closes. pgtest starts a PostgreSQL only for the
// tests that ask for one (newPostgresEngine), and stops it after the tests.
func TestMain(m *testing.M) { os.Exit(pgtest.RunLeakChecked(m)) }
