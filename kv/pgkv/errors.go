package pgkv

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/lethe-db/lethe/kv"
)

// SQLSTATEs that map onto kv sentinels. See
// https://www.postgresql.org/docs/current/errcodes-appendix.html.
const (
	sqlstateSerializationFailure = "40001" // SERIALIZABLE could not order the transaction
	sqlstateDeadlock             = "40P01" // deadlock_detected: one waiter is aborted
	sqlstateDiskFull             = "53100" // disk_full
	sqlstateIOError              = "58030" // io_error
	sqlstateDataCorrupted        = "XX001" // data_corrupted
	sqlstateIndexCorrupted       = "XX002" // index_corrupted
	sqlstateReadOnly             = "25006" // read_only_sql_transaction
	sqlstateLimitExceeded        = "54000" // program_limit_exceeded: an index row (a key) too large
	sqlstateUniqueViolation      = "23505" // unique_violation: a Create of a present key
	sqlstateAdminShutdown        = "57P01" // admin_shutdown: the server is stopping
	sqlstateCrashShutdown        = "57P02" // crash_shutdown
	sqlstateCannotConnectNow     = "57P03" // cannot_connect_now: starting up, or a standby promoting
)

// sentinelFor returns the kv sentinel for a PostgreSQL SQLSTATE, or nil.
func sentinelFor(code string) error {
	switch code {
	case sqlstateSerializationFailure, sqlstateDeadlock:
		return kv.ErrConflict
	case sqlstateDiskFull:
		return kv.ErrNoSpace
	case sqlstateIOError, sqlstateDataCorrupted, sqlstateIndexCorrupted:
		return kv.ErrIO
	case sqlstateReadOnly:
		return kv.ErrReadOnly
	case sqlstateLimitExceeded:
		return kv.ErrTooLarge
	case sqlstateUniqueViolation:
		return kv.ErrExists
	case sqlstateAdminShutdown, sqlstateCrashShutdown, sqlstateCannotConnectNow:
		return kv.ErrUnavailable
	}
	if strings.HasPrefix(code, "08") { // connection_exception and its kin
		return kv.ErrUnavailable
	}
	return nil
}

// mapError wraps err, met while doing op, for the caller: the context's error
// when ctx has ended (pgx's own error then says little more than that), the kv
// sentinel for the server's SQLSTATE when there is one, and err itself
// otherwise. The original error stays in the chain.
func mapError(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(err, ctxErr) {
			return fmt.Errorf("pgkv: %s: %w", op, err)
		}
		return fmt.Errorf("pgkv: %s: %w: %w", op, ctxErr, err)
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		if sentinel := sentinelFor(pgErr.Code); sentinel != nil {
			return fmt.Errorf("pgkv: %s: %w: %w", op, sentinel, err)
		}
	}
	if lostConnection(err) {
		return fmt.Errorf("pgkv: %s: %w: %w", op, kv.ErrUnavailable, err)
	}
	return fmt.Errorf("pgkv: %s: %w", op, err)
}

// lostConnection reports whether err is the database going away rather than
// refusing a statement: a connection that could not be made or was lost
// (the server restarting, failing over, a network cut).
func lostConnection(err error) bool {
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	var pgErr *pgconn.PgError
	switch {
	case errors.As(err, &pgErr):
		return false // the server answered
	case errors.As(err, &connectErr), errors.As(err, &netErr),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, net.ErrClosed), errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.EPIPE):
		return true
	}
	// pgx reports a connection it had to close as "conn closed", and some
	// lost connections only by their message.
	msg := err.Error()
	return strings.Contains(msg, "conn closed") || strings.Contains(msg, "unexpected EOF") || strings.Contains(msg, "connection reset")
}
