package kvtest

import (
	"context"
	"fmt"
	"testing"

	"github.com/lethe-db/lethe/kv"
)

// BenchValue is the 100-byte value the backends' benchmarks store, so that
// their figures compare.
var BenchValue = make([]byte, 100)

// BenchKey is the i-th key of the backends' benchmarks.
func BenchKey(i int) []byte { return fmt.Appendf(nil, "key/%08d", i) }

// Fill stores keys BenchKey(0) to BenchKey(n-1) with BenchValue in one Update.
func Fill(tb testing.TB, s kv.Store, n int) {
	tb.Helper()
	err := s.Update(context.Background(), func(tx kv.Tx) error {
		for i := range n {
			if err := tx.Put(BenchKey(i), BenchValue); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
}
