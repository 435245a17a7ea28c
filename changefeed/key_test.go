package changefeed

import (
	"bytes"
	"cmp"
	"math"
	"math/rand/v2"
	"testing"
)

// tupleOrder is the order keys must have: by second, writer, then seq for
// writes and the document for expiries.
func tupleOrder(a, b Key) int {
	if c := cmp.Compare(a.Second, b.Second); c != 0 {
		return c
	}
	if c := cmp.Compare(a.Writer, b.Writer); c != 0 {
		return c
	}
	if a.IsExpiry() {
		return bytes.Compare(a.Doc, b.Doc)
	}
	return cmp.Compare(a.Seq, b.Seq)
}

func randomKey(r *rand.Rand) Key {
	seconds := []int64{math.MinInt64, -1, 0, 1, 1_700_000_000, math.MaxInt64}
	k := Key{Second: seconds[r.IntN(len(seconds))] + int64(r.IntN(3)) - 1, Writer: uint32(r.IntN(3))}
	if k.IsExpiry() {
		k.Doc = []byte{byte(r.IntN(3)), byte(r.IntN(3))}[:1+r.IntN(2)]
	} else {
		k.Seq = uint64(r.IntN(3)) << (8 * r.IntN(8))
	}
	return k
}

func TestKeyOrderAndRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		a, b := randomKey(r), randomKey(r)
		if got, want := a.Compare(b), tupleOrder(a, b); got != want {
			t.Fatalf("Compare(%+v, %+v) = %d, want %d", a, b, got, want)
		}
		for _, k := range []Key{a, b} {
			back, err := ParseToken(k.Token())
			if err != nil || back.Compare(k) != 0 {
				t.Fatalf("token of %+v came back as %+v, %v", k, back, err)
			}
		}
	}
	// An expiry sorts before every write of its second, after every change
	// of the second before.
	exp := Expiry(100, []byte("doc"))
	if exp.Compare(Key{Second: 100, Writer: EmbeddedWriter, Seq: 0}) >= 0 || exp.Compare(Key{Second: 99, Writer: EmbeddedWriter, Seq: math.MaxUint64}) <= 0 {
		t.Error("an expiry is not first in its second")
	}
	if start := SecondStart(100); start.Compare(exp) >= 0 {
		t.Error("SecondStart is not before the second's expiries")
	}
}

func TestParseTokenRefusesForeignTokens(t *testing.T) {
	for _, s := range []string{"", `"12"`, `"zz"`, `"00000000000000000000000100"`, "*", `"` + "00" + `"`} {
		if k, err := ParseToken(s); err == nil {
			t.Errorf("ParseToken(%q) = %+v, want an error", s, k)
		}
	}
}

// FuzzParseToken: no continuation, however malformed, panics the parser; one
// it accepts renders back to a token that parses to the same key.
func FuzzParseToken(f *testing.F) {
	for _, s := range []string{`"80000000000000000000000100000000000000ff"`, `"8000000000000064000000006162"`, `"zz"`, `*`, ``} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseToken(s)
		if err != nil {
			return
		}
		back, err := ParseToken(k.Token())
		if err != nil || back.Compare(k) != 0 {
			t.Fatalf("%q parsed to %+v, whose token %s parses to %+v, %v", s, k, k.Token(), back, err)
		}
	})
}
