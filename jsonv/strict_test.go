package jsonv

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// wideWithDup is an object wider than wideObject (so duplicates are found
// with a map) whose last member repeats the first one's name.
func wideWithDup() (string, int) {
	var b strings.Builder
	b.WriteString(`{`)
	for i := range 2 * wideObject {
		fmt.Fprintf(&b, `"m%d":%d,`, i, i)
	}
	at := b.Len()
	b.WriteString(`"m0":"again"}`)
	return b.String(), at
}

func TestParseRefusesDuplicateNames(t *testing.T) {
	wide, wideAt := wideWithDup()
	cases := []struct {
		in     string
		name   string
		offset int
	}{
		{`{"id":"a","id":"b"}`, "id", 10},
		{`{"id":"a","pk":"p","id":"a"}`, "id", 19}, // the same value twice is still two copies
		{`{"x":{"k":1,"k":2}}`, "k", 12},
		{`{"a":[1,{"b":{"c":[{"d":0,"d":0}]}}]}`, "d", 26},
		{`[{"a":1},{"a":2,"b":3,"a":4}]`, "a", 22},
		{`{"a":1,"\u0061":2}`, "a", 7}, // equal once unescaped
		{`{"é":1,"\u00e9":2}`, "é", 8},
		{`{"":1,"":2}`, "", 6},
		{` { "a" : 1 , "a" : 2 } `, "a", 13},
		{`{"a":1,"a":{"k":1,"k":2}}`, "a", 7}, // the first problem is reported
		{wide, "m0", wideAt},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.in))
		var de *DuplicateNameError
		if !errors.As(err, &de) {
			t.Errorf("Parse(%.60q) = %v; want a DuplicateNameError", c.in, err)
			continue
		}
		if de.Name != c.name || de.Offset != c.offset {
			t.Errorf("Parse(%.60q): duplicate %q at %d; want %q at %d", c.in, de.Name, de.Offset, c.name, c.offset)
		}
		if c.in[de.Offset] != '"' {
			t.Errorf("Parse(%.60q): offset %d is not the opening quote of a name", c.in, de.Offset)
		}
		want := fmt.Sprintf("duplicate property name '%s' at offset %d", c.name, c.offset)
		if err.Error() != want {
			t.Errorf("message %q; want %q", err, want)
		}
	}
	// The same name in different objects, or in other case, is no duplicate.
	for _, s := range []string{
		`[{"a":1},{"a":2}]`, `{"a":{"a":{"a":1}}}`, `{"a":1,"A":2}`, `{"a":1,"b":{"a":2},"c":[{"a":3}]}`,
		`{"a":1,"a ":2}`, `{"\u0000":1,"":2}`,
	} {
		if _, err := Parse([]byte(s)); err != nil {
			t.Errorf("Parse(%q): %v", s, err)
		}
	}
}

func TestParseRefusesOverflowingNumbers(t *testing.T) {
	long := "1" + strings.Repeat("0", 399)
	cases := []struct {
		in, text string
		offset   int
	}{
		{`1e400`, "1e400", 0},
		{`-1e999`, "-1e999", 0},
		{`{"n":1E+309}`, "1E+309", 5},
		{`[0,1.8e308]`, "1.8e308", 3},
		{`-1.7976931348623159e308`, "-1.7976931348623159e308", 0}, // just past the largest double
		{long, long, 0},
		{`{"id":"a","n":-` + long + `}`, "-" + long, 14},
		{long + `.5`, long + ".5", 0},
		{`0.` + strings.Repeat("0", 100) + `1e500`, `0.` + strings.Repeat("0", 100) + `1e500`, 0}, // 1e399
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.in))
		var ne *NumberRangeError
		if !errors.As(err, &ne) {
			t.Errorf("Parse(%.40q) = %v; want a NumberRangeError", c.in, err)
			continue
		}
		if ne.Text != c.text || ne.Offset != c.offset {
			t.Errorf("Parse(%.40q): %.40q at %d; want %.40q at %d", c.in, ne.Text, ne.Offset, c.text, c.offset)
		}
		want := fmt.Sprintf("the number '%s' at offset %d does not fit a 64-bit floating-point value", clip(c.text), c.offset)
		if err.Error() != want {
			t.Errorf("message %q; want %q", err, want)
		}
		if len(err.Error()) > 200 {
			t.Errorf("message of %d bytes: a long number is not shortened", len(err.Error()))
		}
	}
	if got := (&NumberRangeError{Offset: 3, Text: long}).Error(); got != "the number '"+long[:64]+"...' at offset 3 does not fit a 64-bit floating-point value" {
		t.Errorf("long number message: %s", got)
	}
}

func TestParseAcceptsNumbersThatFitOrUnderflow(t *testing.T) {
	max308 := strings.Repeat("9", 308)
	maxDigits := strconv.FormatFloat(math.MaxFloat64, 'f', -1, 64) // 309 digits
	cases := []struct {
		in   string
		want float64
	}{
		{`0.1`, 0.1},
		{`9223372036854775808`, 1 << 63}, // 2^63: kept as written, computes rounded
		{`12345678901234567890123`, 12345678901234567890123},
		{`1.7976931348623157e308`, math.MaxFloat64},
		{`-1.7976931348623157e308`, -math.MaxFloat64},
		{maxDigits, math.MaxFloat64},
		{max308, 1e308},
		{`1e-400`, 0}, // underflow: accepted, computes as 0 as in Cosmos DB
		{`-1e-400`, 0},
		{`4.9e-324`, 5e-324},
		{`1` + strings.Repeat("0", 400) + `e-400`, 1},
		{`0.` + strings.Repeat("0", 400) + `1`, 0},
		{`-0`, 0},
		{`1E308`, 1e308},
	}
	for _, c := range cases {
		v, err := Parse([]byte(c.in))
		if err != nil {
			t.Errorf("Parse(%.40q): %v", c.in, err)
			continue
		}
		n, ok := v.(Number)
		if !ok || string(n) != c.in {
			t.Errorf("Parse(%.40q) = %v; want the number kept as written", c.in, v)
			continue
		}
		if got := n.Float64(); got != c.want {
			t.Errorf("Parse(%.40q).Float64() = %g; want %g", c.in, got, c.want)
		}
	}
}

func TestParseStoredObject(t *testing.T) {
	// What Parse refuses for overflow, ParseStoredObject reads: documents
	// stored before Parse refused such numbers stay readable.
	o, err := ParseStoredObject([]byte(`{"id":"a","n":1e400,"m":[-1e999]}`))
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := o.Get("n"); n != Number("1e400") || !math.IsInf(n.(Number).Float64(), 1) {
		t.Errorf("n = %v", n)
	}
	if got := string(Marshal(o)); got != `{"id":"a","n":1e400,"m":[-1e999]}` {
		t.Errorf("stored round trip: %s", got)
	}
	o, err = ParseStoredObject([]byte(`{"a":1,"b":2,"a":3}`))
	if err != nil || string(Marshal(o)) != `{"a":3,"b":2}` {
		t.Errorf("stored duplicate: %v %s", err, Marshal(o))
	}
	wide, _ := wideWithDup()
	o, err = ParseStoredObject([]byte(wide))
	if err != nil || o.Len() != 2*wideObject {
		t.Fatalf("stored wide duplicate: %v", err)
	}
	if v, _ := o.Get("m0"); v != "again" {
		t.Errorf("stored wide duplicate kept %v; want the last value", v)
	}
	// Everything else is as strict as Parse.
	for _, s := range []string{`{"a":1`, `[1]`, `{"a":01}`, "{\"a\":\"\xff\"}"} {
		if _, err := ParseStoredObject([]byte(s)); err == nil {
			t.Errorf("ParseStoredObject(%q) accepted", s)
		}
	}
}

func TestSyntaxErrorMessage(t *testing.T) {
	_, err := Parse([]byte(`{"a":1,}`))
	var se *SyntaxError
	if !errors.As(err, &se) || err.Error() != "expected a member name at offset 7" {
		t.Errorf("err = %v", err)
	}
}

// TestWideObjectsKeepOrderAndFindEveryName parses an object as wide as a 2 MB
// body of short members allows (200,000): duplicates are found through a map
// once an object is wide, so this takes milliseconds where a linear search of
// the names so far would take minutes.
func TestWideObjectsKeepOrderAndFindEveryName(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{`)
	const n = 200_000
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"%x":%d`, i, i)
	}
	b.WriteString(`}`)
	o, err := ParseObject([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	if o.Len() != n || o.Key(0) != "0" || o.Key(n-1) != fmt.Sprintf("%x", n-1) {
		t.Fatalf("wide object: %d members", o.Len())
	}
	dup := b.String()[:b.Len()-1] + `,"1abc":0}`
	var de *DuplicateNameError
	if _, err := ParseObject([]byte(dup)); !errors.As(err, &de) || de.Name != "1abc" {
		t.Errorf("duplicate in a wide object: %v", err)
	}
}

// oracle inspects JSON that encoding/json accepts, independently of Parse: the
// first duplicate name (compared as encoding/json decodes names), the first
// number beyond a double's range, and the deepest nesting.
func oracle(b []byte) (dup, big string, hasDup, hasBig bool, depth int) {
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	type frame struct {
		obj     bool
		keys    map[string]bool
		wantKey bool
	}
	var st []*frame
	for {
		tok, err := d.Token()
		if err != nil { // io.EOF: the value is complete (the caller checked json.Valid)
			return
		}
		if n := len(st); n > 0 && st[n-1].obj && st[n-1].wantKey {
			top := st[n-1]
			if tok == json.Delim('}') {
				st = st[:n-1]
			} else {
				k := tok.(string)
				if top.keys[k] && !hasDup {
					dup, hasDup = k, true
				}
				top.keys[k] = true
				top.wantKey = false
				continue
			}
		} else {
			switch t := tok.(type) {
			case json.Delim:
				switch t {
				case '{':
					st = append(st, &frame{obj: true, keys: map[string]bool{}, wantKey: true})
					depth = max(depth, len(st))
					continue
				case '[':
					st = append(st, &frame{})
					depth = max(depth, len(st))
					continue
				default: // ']'
					st = st[:len(st)-1]
				}
			case json.Number:
				if _, err := strconv.ParseFloat(string(t), 64); err != nil && !hasBig {
					big, hasBig = string(t), true
				}
			}
		}
		// A value is complete: an enclosing object wants its next name.
		if n := len(st); n > 0 && st[n-1].obj {
			st[n-1].wantKey = true
		}
	}
}

// FuzzParse: no input panics; Parse accepts exactly the JSON that
// encoding/json accepts and that is valid UTF-8 within MaxDepth and has no
// duplicate names and no number beyond a double (checked by an independent
// oracle); what parses re-encodes to JSON that parses back to an equal value;
// and ParseStoredObject reads every object Parse reads, the same way.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{}`, `[]`, `{"a":[1,{"b":"c"}]}`, `"\ud83d\ude00"`, `"\ud800"`, `-0.5e+10`, `[[[[]]]]`, `{"a":"\u0000"}`,
		`{"id":"a","id":"b"}`, `{"x":{"k":1,"k":2}}`, `[{"a":[{"b":{"c":1,"c":2}}]}]`, `{"a":1,"\u0061":2}`,
		`1e400`, `-1e999`, `{"n":1.8e308}`, `1e-400`, strings.Repeat("9", 400), `9223372036854775808`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := Parse(b)
		valid := json.Valid(b)
		var dup, big string
		var hasDup, hasBig bool
		depth := 0
		if valid {
			dup, big, hasDup, hasBig, depth = oracle(b)
		}
		var de *DuplicateNameError
		var ne *NumberRangeError
		switch {
		case err == nil:
			if !valid {
				t.Fatalf("accepted %q which encoding/json rejects", b)
			}
			if hasDup || hasBig {
				t.Fatalf("accepted %q with duplicate %q (%v) or out-of-range number %q (%v)", b, dup, hasDup, big, hasBig)
			}
		case errors.As(err, &de):
			// Invalid JSON may be refused for its first problem, whatever it is.
			if valid && (!hasDup || de.Offset >= len(b) || b[de.Offset] != '"') {
				t.Fatalf("%q: %v, but the oracle finds no duplicate or the offset is wrong", b, err)
			}
		case errors.As(err, &ne):
			if valid && (!hasBig || !bytes.HasPrefix(b[ne.Offset:], []byte(ne.Text))) {
				t.Fatalf("%q: %v, but the oracle finds no such number", b, err)
			}
		default:
			if valid && utf8.Valid(b) && depth <= MaxDepth && !hasDup && !hasBig {
				t.Fatalf("refused %q, which is valid, clean JSON: %v", b, err)
			}
		}
		if err != nil {
			return
		}
		out := Marshal(v)
		if !json.Valid(out) {
			t.Fatalf("Marshal produced invalid JSON %q from %q", out, b)
		}
		v2, err := Parse(out)
		if err != nil {
			t.Fatalf("re-parse of %q: %v", out, err)
		}
		if !Equal(v, v2) || !bytes.Equal(out, Marshal(v2)) {
			t.Fatalf("round trip changed %q -> %q", b, out)
		}
		if o, ok := v.(*Object); ok {
			so, err := ParseStoredObject(b)
			if err != nil || !bytes.Equal(Marshal(so), Marshal(o)) {
				t.Fatalf("ParseStoredObject(%q) = %v; Parse read it", b, err)
			}
		}
	})
}
