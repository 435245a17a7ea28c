package engine

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	"github.com/lethe-db/lethe/kv"
)

// seqState returns the sequence numbers of container db/c's documents, in
// insertion order, and its counter as stored.
func seqState(t *testing.T, te *testEngine) (seqs []uint64, counter uint64) {
	t.Helper()
	err := te.store.View(ctx, func(r kv.Reader) error {
		_, c, err := getContainer(r, "db", "c")
		if err != nil {
			return err
		}
		p := collKey(pfxOrder, c.rid())
		it := r.Scan(p, kv.PrefixEnd(p), false)
		for it.Next() {
			seqs = append(seqs, binary.BigEndian.Uint64(it.Key()[len(p):]))
		}
		if err := it.Close(); err != nil {
			return err
		}
		counter, err = lastSeq(r, c.rid())
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return seqs, counter
}

// On an exclusive store the engine gives out sequence numbers from a block
// it claims once, instead of reading and writing the container's counter
// with every insert; engines on one store share the block; a block not used
// up when the engine stops is skipped, never given out again.
func TestSeqBlocksOnExclusiveStore(t *testing.T) {
	te := newTestEngine(t)
	te.mustDB("db")
	te.mustContainer("c", "")
	for i := range 3 {
		if err := te.create("c", fmt.Sprintf(`{"id":"a%d","pk":"p"}`, i)); err != nil {
			t.Fatal(err)
		}
	}
	seqs, counter := seqState(t, te)
	if !slices.Equal(seqs, []uint64{1, 2, 3}) || counter != seqBlockSize {
		t.Fatalf("after three creates: sequence numbers %v, counter %d; want [1 2 3] and %d", seqs, counter, seqBlockSize)
	}

	other := openTestEngine(t, te.store, Options{DisableBackground: true})
	if _, err := other.CreateDocument(ctx, DocRef{DB: "db", Coll: "c", PK: pk("p")}, []byte(`{"id":"b","pk":"p"}`)); err != nil {
		t.Fatal(err)
	}
	if seqs, counter = seqState(t, te); seqs[len(seqs)-1] != 4 || counter != seqBlockSize {
		t.Fatalf("a second engine's create: sequence numbers %v, counter %d; want it to go on from the shared block", seqs, counter)
	}
	other.Close()

	te.reopen() // the store's guard, and the block in use, go with the last engine
	if err := te.create("c", `{"id":"c","pk":"p"}`); err != nil {
		t.Fatal(err)
	}
	seqs, counter = seqState(t, te)
	if want := []uint64{1, 2, 3, 4, seqBlockSize + 1}; !slices.Equal(seqs, want) || counter != 2*seqBlockSize {
		t.Fatalf("after a restart: sequence numbers %v, counter %d; want %v and %d", seqs, counter, want, 2*seqBlockSize)
	}
	err := te.store.View(ctx, func(r kv.Reader) error {
		_, c, err := getContainer(r, "db", "c")
		if err != nil {
			return err
		}
		last, err := te.lastSeqGiven(r, c.rid())
		if err == nil && last != seqBlockSize+1 {
			err = fmt.Errorf("last sequence number given %d, want %d", last, seqBlockSize+1)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
