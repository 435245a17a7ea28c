package pgkv

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations take the store's schema from one version to the next:
// migrations[i] from version i to i+1, so the current version is
// len(migrations). {schema} stands for the quoted schema name. Append only:
// a released migration has run on databases that will not run it again.
var migrations = []string{
	// 1: the data. bytea compares with memcmp then by length, which is the
	// contract's bytewise order, and has no collation to get in the way.
	`CREATE TABLE {schema}.kv (
		key   bytea PRIMARY KEY,
		value bytea NOT NULL
	)`,
}

// versionKey names the row of the meta table that holds the schema version.
const versionKey = "schema_version"

// Bootstrap races: two processes that create the same schema at once may both
// pass IF NOT EXISTS and collide on the catalog's unique index. The loser
// tries again, and then finds the schema.
const (
	bootstrapAttempts = 5
	bootstrapPause    = 20 * time.Millisecond
)

// migrate creates the schema if it is missing and applies the migrations it
// has not had, in one transaction that holds the version row's lock, so that
// stores opening the same schema at once migrate it once.
func migrate(ctx context.Context, pool *pgxpool.Pool, schema string) error {
	meta := pgx.Identifier{schema, "meta"}.Sanitize()
	readVersion := "SELECT value FROM " + meta + " WHERE name = '" + versionKey + "'"

	// The usual case, every Open after the first: one round trip.
	var version int64
	err := pool.QueryRow(ctx, readVersion).Scan(&version)
	if err == nil && version == int64(len(migrations)) {
		return nil
	}
	if err != nil && !isUndefined(err) && !errors.Is(err, pgx.ErrNoRows) {
		return mapError(ctx, "read schema version", err)
	}
	if err != nil {
		if err := bootstrap(ctx, pool, schema, meta); err != nil {
			return err
		}
	}

	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, readVersion+" FOR UPDATE").Scan(&version); err != nil {
			return mapError(ctx, "lock schema version", err)
		}
		switch {
		case version > int64(len(migrations)):
			return fmt.Errorf("pgkv: schema version %d is newer than this build supports (%d)", version, len(migrations))
		case version < 0:
			return fmt.Errorf("pgkv: invalid schema version %d", version)
		}
		quoted := pgx.Identifier{schema}.Sanitize()
		for v := version; v < int64(len(migrations)); v++ {
			if _, err := tx.Exec(ctx, strings.ReplaceAll(migrations[v], "{schema}", quoted)); err != nil {
				return mapError(ctx, fmt.Sprintf("migrate schema to version %d", v+1), err)
			}
		}
		_, err := tx.Exec(ctx, "UPDATE "+meta+" SET value = $1 WHERE name = $2", len(migrations), versionKey)
		if err != nil {
			return mapError(ctx, "update schema version", err)
		}
		return nil
	})
}

// bootstrap creates the schema and its meta table at version 0, if missing.
func bootstrap(ctx context.Context, pool *pgxpool.Pool, schema, meta string) error {
	// Without arguments pgx sends this in the simple protocol: one round trip,
	// one implicit transaction.
	sql := "CREATE SCHEMA IF NOT EXISTS " + pgx.Identifier{schema}.Sanitize() + ";\n" +
		"CREATE TABLE IF NOT EXISTS " + meta + " (name text PRIMARY KEY, value bigint NOT NULL);\n" +
		"INSERT INTO " + meta + " (name, value) VALUES ('" + versionKey + "', 0) ON CONFLICT (name) DO NOTHING"
	var err error
	for attempt := range bootstrapAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(bootstrapPause):
			}
		}
		if _, err = pool.Exec(ctx, sql); err == nil || !isDuplicate(err) {
			break
		}
	}
	if err != nil {
		return mapError(ctx, "create schema", err)
	}
	return nil
}

// isUndefined reports whether err says that the schema or the table is missing.
func isUndefined(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "3F000" || pgErr.Code == "42P01")
}

// isDuplicate reports whether err is a concurrent creation's collision.
func isDuplicate(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "23505" || pgErr.Code == "42P06" || pgErr.Code == "42P07" ||
		pgErr.Code == sqlstateSerializationFailure)
}
