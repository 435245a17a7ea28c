package pgkv

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lethe-db/lethe/kv"
)

// TestMapError checks the SQLSTATE mapping, including the states a test
// cannot provoke on a healthy server (a full disk, a corrupt page), and that
// the server's error stays in the chain.
func TestMapError(t *testing.T) {
	cases := []struct {
		code string
		want error // nil: no sentinel
	}{
		{"40001", kv.ErrConflict},
		{"40P01", kv.ErrConflict},
		{"53100", kv.ErrNoSpace},
		{"58030", kv.ErrIO},
		{"XX001", kv.ErrIO},
		{"XX002", kv.ErrIO},
		{"25006", kv.ErrReadOnly},
		{"54000", kv.ErrTooLarge},
		{"57P01", kv.ErrUnavailable},
		{"57P03", kv.ErrUnavailable},
		{"08006", kv.ErrUnavailable},
		{"53200", nil}, // out of memory: not a full disk
		{"23505", nil},
		{"57014", nil}, // query_canceled by the server, not by our context
	}
	sentinels := []error{kv.ErrConflict, kv.ErrNoSpace, kv.ErrIO, kv.ErrReadOnly, kv.ErrTooLarge, kv.ErrUnavailable, kv.ErrNotFound, kv.ErrClosed}
	for _, c := range cases {
		pgErr := &pgconn.PgError{Severity: "ERROR", Code: c.code, Message: "test"}
		err := mapError(context.Background(), "op", fmt.Errorf("pgx: %w", pgErr))
		for _, s := range sentinels {
			if got := errors.Is(err, s); got != (s == c.want) {
				t.Errorf("SQLSTATE %s: errors.Is(%v, %v) = %v", c.code, err, s, got)
			}
		}
		var back *pgconn.PgError
		if !errors.As(err, &back) || back != pgErr {
			t.Errorf("SQLSTATE %s: the server's error is not in the chain of %v", c.code, err)
		}
	}

	// An ended context wins over what pgx made of it.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := mapError(ctx, "op", &pgconn.PgError{Code: "40001"})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("mapError with a cancelled context = %v, want context.Canceled", err)
	}
	if errors.Is(err, kv.ErrConflict) {
		t.Errorf("mapError with a cancelled context = %v: a conflict that would be retried", err)
	}
}
