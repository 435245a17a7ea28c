package gateway

import (
	"context"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/lethe-db/lethe"
)

// pkHeaderName is the partition key request header.
const pkHeaderName = "x-ms-documentdb-partitionkey"

func TestParsePartitionKeyHeader(t *testing.T) {
	tests := []struct {
		header string
		want   lethe.PartitionKey
	}{
		{`["p1"]`, lethe.PartitionKey{"p1"}},
		{`[""]`, lethe.PartitionKey{""}},
		{`[5]`, lethe.PartitionKey{5.0}},
		{`[-1.5e-3]`, lethe.PartitionKey{-0.0015}},
		{`[1e+21]`, lethe.PartitionKey{1e21}},
		{`[123456789012345680000]`, lethe.PartitionKey{123456789012345680000.0}},
		{`[true]`, lethe.PartitionKey{true}},
		{`[false]`, lethe.PartitionKey{false}},
		{`[null]`, lethe.PartitionKey{nil}},
		{`[{}]`, lethe.PartitionKey{lethe.Undefined{}}},
		{`[ { } ]`, lethe.PartitionKey{lethe.Undefined{}}},
		{`[]`, lethe.PartitionKey{}},
		{` [ ] `, lethe.PartitionKey{}},
		{`["a","b"]`, lethe.PartitionKey{"a", "b"}},
		{`["a", 1, true, null, {}]`, lethe.PartitionKey{"a", 1.0, true, nil, lethe.Undefined{}}},
		{`["\u00e9\n\t\"\\\/"]`, lethe.PartitionKey{"é\n\t\"\\/"}},
		{`["\ud83d\ude00"]`, lethe.PartitionKey{"😀"}},
		{`["é😀"]`, lethe.PartitionKey{"é😀"}},
		{`["a,b"]`, lethe.PartitionKey{"a,b"}},
		{`["]"]`, lethe.PartitionKey{"]"}},
		// Go-quoted strings (strconv.QuoteToASCII), which are not valid JSON.
		{`["\U0001f600"]`, lethe.PartitionKey{"😀"}},
		{`["\a\v\x7f"]`, lethe.PartitionKey{"\a\v\x7f"}},
		{`["\x41\101"]`, lethe.PartitionKey{"AA"}},
		{`["emoji \U0001f600", 5, true, null, {}]`, lethe.PartitionKey{"emoji 😀", 5.0, true, nil, lethe.Undefined{}}},
		{` [ "\a" , "]" , "," ] `, lethe.PartitionKey{"\a", "]", ","}},
		{`["\a", {  }]`, lethe.PartitionKey{"\a", lethe.Undefined{}}},
		// Invalid UTF-8, which only Go's \x escapes can express, becomes U+FFFD
		// byte by byte, as encoding/json writes it into the document body.
		{`["\xff\xfe"]`, lethe.PartitionKey{"\uFFFD\uFFFD"}},
		{`["a\xe2\x82"]`, lethe.PartitionKey{"a\uFFFD\uFFFD"}},
	}
	for _, tt := range tests {
		got, err := parsePartitionKeyHeader(tt.header)
		if err != nil {
			t.Errorf("parsePartitionKeyHeader(%s): %v", tt.header, err)
			continue
		}
		if got == nil || !got.Equal(tt.want) {
			t.Errorf("parsePartitionKeyHeader(%s) = %#v, want %#v", tt.header, got, tt.want)
		}
	}
}

func TestParsePartitionKeyHeaderInvalid(t *testing.T) {
	const (
		mismatch = "doesn't correspond to definition"
		invalid  = "is invalid"
	)
	tests := []struct {
		header  string
		wantMsg string
	}{
		// Well-formed JSON that is not a partition key value.
		{`"p1"`, mismatch},
		{`5`, mismatch},
		{`null`, mismatch},
		{`{}`, mismatch},
		{`[["a"]]`, mismatch},
		{`[[]]`, mismatch},
		{`[{"a":1}]`, mismatch},
		{`["a",{"b":null}]`, mismatch},
		{`[1e999]`, mismatch},
		{`[[1],"\a"]`, mismatch},
		// Not parseable.
		{``, invalid},
		{`   `, invalid},
		{`p1`, invalid},
		{`[`, invalid},
		{`]`, invalid},
		{`[,]`, invalid},
		{`[1,]`, invalid},
		{`[,1]`, invalid},
		{`[1,,2]`, invalid},
		{`["a"]x`, invalid},
		{`["a"]]`, invalid},
		{`["a" "b"]`, invalid},
		{`["unterminated]`, invalid},
		{`["\a"`, invalid},
		{`["\a" x]`, invalid},
		{`["\q"]`, invalid},
		{`["\a",]`, invalid},
		{`["\a",NaN]`, invalid},
		{`["\a",Infinity]`, invalid},
		{`["\a",'x']`, invalid},
		{"[\"\\a\",`raw`]", invalid},
		{`["\a", {"a":1,"b":2}]`, invalid},
		{`["\ud83d"]x`, invalid},
		{`[tru]`, invalid},
		{`[01]`, invalid},
		{`[+1]`, invalid},
	}
	for _, tt := range tests {
		pk, err := parsePartitionKeyHeader(tt.header)
		if !lethe.IsCode(err, lethe.CodeBadRequest) {
			t.Errorf("parsePartitionKeyHeader(%s) = %v, %v; want BadRequest", tt.header, pk, err)
			continue
		}
		if msg := lethe.ErrorMessage(err); !strings.Contains(msg, tt.wantMsg) {
			t.Errorf("parsePartitionKeyHeader(%s) message %q, want it to contain %q", tt.header, msg, tt.wantMsg)
		}
	}
}

func TestParsePartitionKeyHeaderTruncatesMessage(t *testing.T) {
	long := `["` + strings.Repeat("x", 500) + `"` // unterminated
	_, err := parsePartitionKeyHeader(long)
	if msg := lethe.ErrorMessage(err); len(msg) > 200 || !strings.Contains(msg, "...") {
		t.Errorf("message not truncated: %q", msg)
	}
}

// sdkPKStrings are the partition key strings whose Go SDK encoding is tested.
var sdkPKStrings = []string{
	"plain",
	"with \"quotes\"",
	"tab\t",
	"newline\n\r",
	"emoji 😀",
	"\a\v\x7f",
	"\x00\x1f",
	"é",
	"a,b",
	"]",
	"[\"x\"]",
	"back\\slash",
	"slash/",
	"<html>&",
	"\u2028\ufeff",
	"\U0010ffff",
	"",
	"\xff",
}

// sdkPKNumbers are the partition key numbers whose Go SDK encoding is tested.
var sdkPKNumbers = []float64{
	0, 5, -1, 1.5, -2.5e-300, 1e20, 1e21, 1e-7, 123456789012345678,
	9007199254740993, math.MaxFloat64, math.SmallestNonzeroFloat64, math.Copysign(0, -1),
}

// goSDKQuote encodes a string component the way azcosmos v1.5.0 does in its
// unexported PartitionKey.toJsonString: with strconv.QuoteToASCII.
// TestParsePartitionKeyHeaderGoSDK checks the real SDK output on the wire.
func goSDKQuote(s string) string { return strconv.QuoteToASCII(s) }

func TestParsePartitionKeyHeaderQuoteToASCII(t *testing.T) {
	for _, s := range sdkPKStrings {
		h := "[" + goSDKQuote(s) + "]"
		got, err := parsePartitionKeyHeader(h)
		if err != nil {
			t.Errorf("parsePartitionKeyHeader(%s) for %q: %v", h, s, err)
			continue
		}
		if want := (lethe.PartitionKey{validUTF8PerByte(s)}); !got.Equal(want) {
			t.Errorf("parsePartitionKeyHeader(%s) = %#v, want %#v", h, got, want)
		}
	}
	h := "[" + goSDKQuote("a") + "," + goSDKQuote("😀") + "," + goSDKQuote("\a") + "]"
	got, err := parsePartitionKeyHeader(h)
	if want := (lethe.PartitionKey{"a", "😀", "\a"}); err != nil || !got.Equal(want) {
		t.Errorf("parsePartitionKeyHeader(%s) = %#v, %v; want %#v", h, got, err, want)
	}
}

// TestParsePartitionKeyHeaderGoSDK sends partition keys through the real Go SDK
// and parses the headers it puts on the wire.
func TestParsePartitionKeyHeaderGoSDK(t *testing.T) {
	rec := newSDKRecorder(t)
	ctx := context.Background()
	c := mustContainer(t, mustDatabase(t, rec.client, "db1"), "c1")

	type tc struct {
		pk   azcosmos.PartitionKey
		want lethe.PartitionKey
	}
	var cases []tc
	for _, s := range sdkPKStrings {
		cases = append(cases, tc{azcosmos.NewPartitionKeyString(s), lethe.PartitionKey{validUTF8PerByte(s)}})
	}
	for _, n := range sdkPKNumbers {
		cases = append(cases, tc{azcosmos.NewPartitionKeyNumber(n), lethe.PartitionKey{n}})
	}
	cases = append(cases,
		tc{azcosmos.NewPartitionKeyBool(true), lethe.PartitionKey{true}},
		tc{azcosmos.NewPartitionKeyBool(false), lethe.PartitionKey{false}},
		tc{azcosmos.NullPartitionKey, lethe.PartitionKey{nil}},
		tc{azcosmos.NewPartitionKeyString("a").AppendString("😀").AppendNumber(-7.25).AppendBool(true).AppendNull(),
			lethe.PartitionKey{"a", "😀", -7.25, true, nil}},
		tc{azcosmos.NewPartitionKeyString("\a").AppendString("b,]"), lethe.PartitionKey{"\a", "b,]"}},
	)

	for _, tc := range cases {
		rec.requests() // forget the account read and earlier requests
		_, _ = c.ReadItem(ctx, tc.pk, "id1", nil)
		reqs := rec.requests()
		var h []string
		for _, r := range reqs {
			if r.method == "GET" && strings.HasSuffix(r.path, "/docs/id1") {
				h = r.header.Values(pkHeaderName)
			}
		}
		if len(h) != 1 {
			t.Errorf("%v: the SDK sent partition key headers %q, want one", tc.want, h)
			continue
		}
		got, err := parsePartitionKeyHeader(h[0])
		if err != nil {
			t.Errorf("%v: parsePartitionKeyHeader(%s): %v", tc.want, h[0], err)
			continue
		}
		if !got.Equal(tc.want) {
			t.Errorf("parsePartitionKeyHeader(%s) = %#v, want %#v", h[0], got, tc.want)
		}
		t.Logf("%-40s %s", tc.want, h[0])
	}

	// The hazard is real: the SDK writes characters outside the BMP as \U escapes.
	rec.requests()
	_, _ = c.ReadItem(ctx, azcosmos.NewPartitionKeyString("😀"), "id1", nil)
	var sent string
	for _, r := range rec.requests() {
		if v := r.header.Get(pkHeaderName); v != "" {
			sent = v
		}
	}
	if sent != `["\U0001f600"]` {
		t.Errorf(`the SDK sent %s for "😀", want ["\U0001f600"]`, sent)
	}

	// An empty key (NewPartitionKey()) is not sent at all.
	rec.requests()
	_, _ = c.ReadItem(ctx, azcosmos.NewPartitionKey(), "id1", nil)
	for _, r := range rec.requests() {
		if v := r.header.Values(pkHeaderName); len(v) > 0 {
			t.Errorf("the SDK sent %s %q for an empty key; this test expected no header", pkHeaderName, v)
		}
	}
}

// TestSingleSimpleString checks the header's fast path against the JSON
// reader: it takes only what the reader reads as one string, the same way.
func TestSingleSimpleString(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{`["p1"]`, "p1", true},
		{`["é 😀 a b"]`, "é 😀 a b", true},
		{`[""]`, "", true},
		{`["a\"b"]`, "", false},
		{`["a\nb"]`, "", false},
		{"[\"a\tb\"]", "", false},
		{`["a","b"]`, "", false},
		{`[ "p1" ]`, "", false},
		{"[\"\xff\"]", "", false},
		{`["p1"`, "", false},
		{`[5]`, "", false},
		{`"p1"`, "", false},
	} {
		v, ok := singleSimpleString(tc.in)
		if ok != tc.ok || v != tc.want {
			t.Errorf("singleSimpleString(%q) = %q, %v; want %q, %v", tc.in, v, ok, tc.want, tc.ok)
		}
		if !ok {
			continue
		}
		want, err := parsePartitionKeyJSON(tc.in)
		if err != nil || !want.Equal(lethe.PartitionKey{v}) {
			t.Errorf("%q: the JSON reader gives %#v, %v; the fast path %q", tc.in, want, err, v)
		}
	}
}

func FuzzParsePartitionKeyHeader(f *testing.F) {
	for _, s := range []string{`["p1"]`, `[5]`, `[{}]`, `[]`, `["\U0001f600",null]`, `["\a\v\x7f",true]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if v, ok := singleSimpleString(s); ok {
			want, err := parsePartitionKeyJSON(s)
			if err != nil || !want.Equal(lethe.PartitionKey{v}) {
				t.Fatalf("singleSimpleString(%q) = %q; the JSON reader gives %#v, %v", s, v, want, err)
			}
		}
		pk, err := parsePartitionKeyHeader(s)
		if err != nil {
			if !lethe.IsCode(err, lethe.CodeBadRequest) {
				t.Fatalf("parsePartitionKeyHeader(%q): error %v is not BadRequest", s, err)
			}
			return
		}
		if pk == nil {
			t.Fatalf("parsePartitionKeyHeader(%q) = nil without error", s)
		}
		for i, c := range pk {
			switch v := c.(type) {
			case string:
				if !utf8.ValidString(v) {
					t.Fatalf("parsePartitionKeyHeader(%q): component %d %q is not valid UTF-8", s, i, v)
				}
			case float64, bool, nil, lethe.Undefined:
			default:
				t.Fatalf("parsePartitionKeyHeader(%q): component %d has type %T", s, i, c)
			}
		}
		b, err := pk.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON(%#v): %v", pk, err)
		}
		again, err := parsePartitionKeyHeader(string(b))
		if err != nil {
			t.Fatalf("parsePartitionKeyHeader(%q) (from %q): %v", b, s, err)
		}
		if !again.Equal(pk) {
			t.Fatalf("round trip of %q: %#v, then %s, then %#v", s, pk, b, again)
		}
	})
}
