package query

import (
	"bytes"
	"math"
	"math/rand"
	"slices"
	"testing"

	"github.com/lethe-db/lethe/jsonv"
)

// TestKeyOrder lists values in ascending order: their encodings must sort
// the same way, and each must equal itself only.
func TestKeyOrder(t *testing.T) {
	obj := func(kv ...any) *jsonv.Object {
		o := jsonv.NewObject(len(kv) / 2)
		for i := 0; i < len(kv); i += 2 {
			o.Set(kv[i].(string), kv[i+1])
		}
		return o
	}
	num := func(s string) jsonv.Value { return jsonv.Number(s) }
	ordered := []jsonv.Value{
		undefined,
		nil,
		false,
		true,
		num("-1e308"), num("-2.5"), num("-1"), num("-1e-300"), num("0"), num("1e-300"), num("1"), num("2"), num("1e308"),
		"", "\x00", "\x00\x00", "\x00a", "A", "Z", "a", "a\x00", "a\x00b", "ab", "b", "é", "\uFF5E", "😀",
		[]jsonv.Value{}, []jsonv.Value{nil}, []jsonv.Value{num("1")}, []jsonv.Value{num("1"), num("0")}, []jsonv.Value{num("2")}, []jsonv.Value{"a"}, []jsonv.Value{[]jsonv.Value{}},
		obj(), obj("", nil), obj("a", nil), obj("a", num("1")), obj("a", num("1"), "b", num("0")), obj("a", num("2")), obj("a\x00", nil), obj("b", false),
	}
	for i, a := range ordered {
		for j, b := range ordered {
			ka, kb := appendKey(nil, a, false), appendKey(nil, b, false)
			want := 0
			switch {
			case i < j:
				want = -1
			case i > j:
				want = 1
			}
			if got := bytes.Compare(ka, kb); got != want {
				t.Errorf("compare(%s, %s) = %d, want %d", show(a), show(b), got, want)
			}
			if got := bytes.Compare(appendKey(nil, a, true), appendKey(nil, b, true)); got != -want {
				t.Errorf("compare desc(%s, %s) = %d, want %d", show(a), show(b), got, -want)
			}
			if got := compareTotal(a, b); got != want {
				t.Errorf("compareTotal(%s, %s) = %d, want %d", show(a), show(b), got, want)
			}
		}
	}
	// Equal JSON values encode equally.
	same := [][2]jsonv.Value{
		{num("1"), num("1.0")}, {num("0"), num("-0")}, {num("100"), num("1e2")},
		{obj("a", num("1"), "b", num("2")), obj("b", num("2"), "a", num("1.0"))},
	}
	for _, p := range same {
		if !bytes.Equal(appendKey(nil, p[0], false), appendKey(nil, p[1], false)) {
			t.Errorf("%s and %s encode differently", show(p[0]), show(p[1]))
		}
	}
}

func show(v jsonv.Value) string {
	if isUndefined(v) {
		return "undefined"
	}
	return string(jsonv.Marshal(v))
}

// randValue returns a random JSON value of limited depth, biased towards
// small, colliding values.
func randValue(rng *rand.Rand, depth int) jsonv.Value {
	n := 7
	if depth <= 0 {
		n = 5
	}
	switch rng.Intn(n) {
	case 0:
		return nil
	case 1:
		return rng.Intn(2) == 0
	case 2:
		fs := []float64{0, 1, -1, 2.5, -2.5, 1e300, -1e300, math.SmallestNonzeroFloat64, 3}
		return jsonv.NumberFromFloat(fs[rng.Intn(len(fs))])
	case 3, 4:
		ss := []string{"", "a", "b", "ab", "a\x00", "\x00", "é", "😀", "\uFF5E", "A"}
		return ss[rng.Intn(len(ss))]
	case 5:
		a := make([]jsonv.Value, rng.Intn(3))
		for i := range a {
			a[i] = randValue(rng, depth-1)
		}
		return a
	default:
		o := jsonv.NewObject(2)
		for range rng.Intn(3) {
			o.Set([]string{"", "a", "b", "\x00"}[rng.Intn(4)], randValue(rng, depth-1))
		}
		return o
	}
}

// TestKeyProperties checks on random values that encodings are prefix-free
// (so tuples compare element by element), that equal encodings mean equal
// values, and that compareTotal agrees with the encodings.
func TestKeyProperties(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	for range 20000 {
		a, b := randValue(rng, 3), randValue(rng, 3)
		ka, kb := appendKey(nil, a, false), appendKey(nil, b, false)
		c := bytes.Compare(ka, kb)
		if (c == 0) != jsonv.Equal(a, b) {
			t.Fatalf("%s vs %s: compare %d, Equal %v", show(a), show(b), c, jsonv.Equal(a, b))
		}
		if c != 0 && (bytes.HasPrefix(ka, kb) || bytes.HasPrefix(kb, ka)) {
			t.Fatalf("%x and %x: one is a prefix of the other", ka, kb)
		}
		if got := compareTotal(a, b); got != c {
			t.Fatalf("compareTotal(%s, %s) = %d, encodings %d", show(a), show(b), got, c)
		}
		// A tuple compares by its first differing element.
		x := randValue(rng, 1)
		for _, desc := range []bool{false, true} {
			ta := appendKey(appendKey(nil, a, desc), x, false)
			tb := appendKey(appendKey(nil, b, desc), randValue(rng, 1), false)
			want := c
			if desc {
				want = -c
			}
			if got := bytes.Compare(ta, tb); c != 0 && got != want {
				t.Fatalf("tuples (%s, ...) and (%s, ...), desc %v: %d, want %d", show(a), show(b), desc, got, want)
			}
		}
	}
}

// TestDecodeScalarKey: every scalar key decodes from its encoding, in both
// directions, whatever follows it; other encodings do not decode.
func TestDecodeScalarKey(t *testing.T) {
	num := func(s string) jsonv.Value { return jsonv.Number(s) }
	scalars := []jsonv.Value{
		undefined, nil, false, true,
		num("-1e308"), num("-2.5"), num("-1"), num("-1e-300"), num("0"), num("1e-300"), num("1"), num("3.25"), num("9007199254740993"), num("1e308"),
		"", "\x00", "\x00\x00", "a\x00b", "ab", "é", "😀", string(make([]byte, 300)),
	}
	for _, desc := range []bool{false, true} {
		for _, v := range scalars {
			enc := appendKey(nil, v, desc)
			for _, tail := range [][]byte{nil, appendKey(nil, "next", desc), {0, 0, 0, 0, 0, 0, 0, 1}} {
				got, undef, ok := decodeScalarKey(append(slices.Clip(enc), tail...), desc)
				if !ok || undef != (v == undefined) {
					t.Fatalf("%#v (desc %v, then %x): decoded %#v, undefined %v, ok %v", v, desc, tail, got, undef, ok)
				}
				if v != undefined && !bytes.Equal(appendKey(nil, got, desc), enc) {
					t.Errorf("%#v (desc %v): decoded %#v, which encodes differently", v, desc, got)
				}
			}
			if len(enc) > 1 {
				if _, _, ok := decodeScalarKey(enc[:len(enc)-1], desc); ok {
					t.Errorf("%#v (desc %v): a truncated encoding decoded", v, desc)
				}
			}
		}
		for _, v := range []jsonv.Value{[]jsonv.Value{}, jsonv.NewObject(0)} {
			if _, _, ok := decodeScalarKey(appendKey(nil, v, desc), desc); ok {
				t.Errorf("%#v (desc %v) decoded as a scalar", v, desc)
			}
		}
	}
}

// FuzzResumeFirstKey feeds arbitrary cursors to ResumeFirstKey. It must
// never panic, and a key it decodes must encode to the cursor's first bytes.
func FuzzResumeFirstKey(f *testing.F) {
	for _, desc := range []bool{false, true} {
		for _, v := range []jsonv.Value{nil, true, jsonv.Number("-2.5"), "a\x00b", undefined} {
			f.Add(append([]byte{cursorOrder}, appendKey(nil, v, desc)...), desc)
		}
	}
	asc, err := Parse("SELECT c.id FROM c ORDER BY c.k")
	if err != nil {
		f.Fatal(err)
	}
	desc, err := Parse("SELECT c.id FROM c ORDER BY c.k DESC")
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cursor []byte, isDesc bool) {
		q := asc
		if isDesc {
			q = desc
		}
		v, undef, ok := q.ResumeFirstKey(cursor)
		if !ok {
			return
		}
		var enc []byte
		if undef {
			enc = appendKey(nil, undefined, isDesc)
		} else {
			enc = appendKey(nil, v, isDesc)
		}
		if !bytes.HasPrefix(cursor[1:], enc) {
			t.Fatalf("cursor %x decoded to %#v (undefined %v), which encodes to %x", cursor, v, undef, enc)
		}
	})
}
