package pgkv

import (
	"context"
	"errors"
	"fmt"

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
	return fmt.Errorf("pgkv: %s: %w", op, err)
}
