package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/ru"
)

// dbRecord is a database as stored under its B key.
type dbRecord struct {
	RID  string          `json:"rid"`
	Body json.RawMessage `json:"body"`
	ETag string          `json:"etag"`
	// Throughput is the database's shared provisioned throughput; nil: none.
	Throughput *Throughput `json:"throughput,omitempty"`
}

func (r *dbRecord) rid() [4]byte {
	var out [4]byte
	b, _ := decodeRID(r.RID)
	copy(out[:], b)
	return out
}

func (r *dbRecord) resource() Resource {
	return Resource{Body: r.Body, ETag: r.ETag, RID: r.RID, Charge: ru.Metadata}
}

// getDatabase reads a database record. The record may be shared (metaCache):
// do not modify it.
func getDatabase(r kv.Reader, id string) (*dbRecord, error) {
	key := databaseKey(id)
	v, err := r.Get(key)
	if errors.Is(err, kv.ErrNotFound) {
		return nil, notFound()
	}
	if err != nil {
		return nil, fmt.Errorf("read database %q: %w", id, err)
	}
	rec, err := decodeDatabase(key, v)
	if err != nil {
		return nil, fmt.Errorf("decode database %q: %w", id, err)
	}
	return rec, nil
}

// CreateDatabase creates a database from its JSON body ({"id": ...}).
// Returns BadRequest for an invalid body or id and Conflict if it exists.
func (e *Engine) CreateDatabase(ctx context.Context, body []byte) (Resource, error) {
	return e.CreateDatabaseWithThroughput(ctx, body, nil)
}

// CreateDatabaseWithThroughput is CreateDatabase with shared provisioned
// throughput (see ParseThroughput; nil: none), used by its containers that
// have none of their own.
func (e *Engine) CreateDatabaseWithThroughput(ctx context.Context, body []byte, tp *Throughput) (Resource, error) {
	defer e.begin()()
	now, o, err := e.nowAndObject(ctx, body)
	if err != nil {
		return Resource{}, err
	}
	idv, ok := o.Get("id")
	id, err := validateResourceName("database", idv, ok)
	if err != nil {
		return Resource{}, err
	}
	var res Resource
	err = e.store.Update(ctx, func(tx kv.Tx) error {
		if _, err := tx.Get(databaseKey(id)); err == nil {
			return lethe.Errorf(lethe.CodeConflict, "Entity with the specified id already exists in the system.")
		} else if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		n, err := nextCounter(tx, keyDBSeq, 4)
		if err != nil {
			return err
		}
		rid := encodeRID(func() []byte { r := dbRID(uint32(n)); return r[:] }())
		etag := etagFor(e.nextLSN())
		stampSystem(o, rid, "dbs/"+rid+"/", etag, now, "_colls", "colls/", "_users", "users/")
		rec := dbRecord{RID: rid, Body: jsonv.Marshal(o), ETag: etag}
		if rec.Throughput, err = e.stampThroughput(tx, tp, now); err != nil {
			return err
		}
		v, err := json.Marshal(&rec)
		if err != nil {
			return err
		}
		res = rec.resource()
		return tx.Put(databaseKey(id), v)
	})
	if err == nil {
		e.recordsChanged()
	}
	return res, err
}

// ReadDatabase returns a database. Returns NotFound if it does not exist.
func (e *Engine) ReadDatabase(ctx context.Context, id string) (Resource, error) {
	defer e.begin()()
	var res Resource
	err := e.store.View(ctx, func(r kv.Reader) error {
		rec, err := getDatabase(r, id)
		if err != nil {
			return err
		}
		res = rec.resource()
		return nil
	})
	return res, err
}

// ListDatabases returns every database, ordered by id.
func (e *Engine) ListDatabases(ctx context.Context) ([]Resource, error) {
	defer e.begin()()
	var out []Resource
	err := e.store.View(ctx, func(r kv.Reader) error {
		it := r.Scan([]byte{pfxDatabase}, []byte{pfxDatabase + 1}, false)
		defer it.Close()
		for it.Next() {
			var rec dbRecord
			if err := json.Unmarshal(it.Value(), &rec); err != nil {
				return fmt.Errorf("decode database: %w", err)
			}
			out = append(out, rec.resource())
		}
		return it.Err()
	})
	return out, err
}

// DeleteDatabase deletes a database with all its containers and documents.
// Returns NotFound if it does not exist.
func (e *Engine) DeleteDatabase(ctx context.Context, id string) error {
	defer e.begin()()
	var dropped []string // budgets to forget
	err := e.store.Update(ctx, func(tx kv.Tx) error {
		rec, err := getDatabase(tx, id)
		if err != nil {
			return err
		}
		colls, err := listContainerRecords(tx, rec.rid())
		if err != nil {
			return err
		}
		dropped = append(dropped[:0], rec.RID)
		for _, c := range colls {
			dropped = append(dropped, c.RID)
			if err := dropContainerData(tx, c.rid()); err != nil {
				return err
			}
		}
		p := containerPrefix(rec.rid())
		if err := tx.DeleteRange(p, kv.PrefixEnd(p)); err != nil {
			return err
		}
		return tx.Delete(databaseKey(id))
	})
	if err == nil {
		e.recordsChanged()
		e.budgets.drop(dropped...)
	}
	return err
}
