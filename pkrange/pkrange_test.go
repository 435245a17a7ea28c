package pkrange

import (
	"math"
	"slices"
	"testing"

	"github.com/lethe-db/lethe"
)

// TestEPK checks effective partition keys against values computed by the
// official JavaScript SDK's own hashing (utils/hashing/v2.js and
// multiHash.js in @azure/cosmos 4.9.3), which clients route requests by.
func TestEPK(t *testing.T) {
	cases := []struct {
		pk    lethe.PartitionKey
		multi bool
		want  string
	}{
		{lethe.PartitionKey{"a"}, false, "3A5381E1114EB8D3FCC90795045B49B7"},
		{lethe.PartitionKey{""}, false, "32E9366E637A71B4E710384B2F4970A0"},
		{lethe.PartitionKey{"Test"}, false, "0DA42FAC2F80EED04EF95C74DAC3DC43"},
		{lethe.PartitionKey{"WithUnicode鱀"}, false, "19F3EACF1AD95D15CEB5CBC7B8A2DBDA"},
		{lethe.PartitionKey{"emoji 😀"}, false, "1955D8DF7871CE571B59350BB4C30A69"},
		{lethe.PartitionKey{5.0}, false, "19C08621B135968252FB34B4CF66F811"},
		{lethe.PartitionKey{0.0}, false, "155B95BEDAC4B1E9EC1CDC9BB0DDDE58"},
		{lethe.PartitionKey{math.Copysign(0, -1)}, false, "155B95BEDAC4B1E9EC1CDC9BB0DDDE58"}, // -0 is 0
		{lethe.PartitionKey{-1.5}, false, "151793206780805FF6E1DCAE6C787B6A"},
		{lethe.PartitionKey{1e300}, false, "1234CB21048B20039B22F11DBB13CD7B"},
		{lethe.PartitionKey{true}, false, "0E711127C5B5A8E4726AC6DD306A3E59"},
		{lethe.PartitionKey{false}, false, "2FE1BE91E90A3439635E0E9E37361EF2"},
		{lethe.PartitionKey{nil}, false, "378867E4430E67857ACE5C908374FE16"},
		{lethe.PartitionKey{lethe.Undefined{}}, false, "11622DAA78F835834610ABE56EFF5CB5"},
		{lethe.PartitionKey{"a"}, true, "3A5381E1114EB8D3FCC90795045B49B7"},
		{lethe.PartitionKey{"a", "b"}, true, "3A5381E1114EB8D3FCC90795045B49B7195644569A78B1E22D200348AF9416CE"},
		{lethe.PartitionKey{1.0, "x", nil}, true, "20CD98B339BA78A5D0CF6953B87070B011E3F358618BE9AA5BAFF4C7C74F0716378867E4430E67857ACE5C908374FE16"},
		{nil, false, ""},
	}
	for _, c := range cases {
		if got := EPK(c.pk, c.multi); got != c.want {
			t.Errorf("EPK(%v, multi %v) = %s, want %s", c.pk, c.multi, got, c.want)
		}
	}
}

func TestLayout(t *testing.T) {
	if got := Layout(1); !slices.Equal(got, []Range{{ID: "0", Min: "", Max: End}}) {
		t.Fatalf("Layout(1) = %v", got)
	}
	three := Layout(3)
	want := []Range{
		{"0", "", "15555555555555555555555555555555"},
		{"1", "15555555555555555555555555555555", "2AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"},
		{"2", "2AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", End},
	}
	if !slices.Equal(three, want) {
		t.Fatalf("Layout(3) = %v\nwant %v", three, want)
	}
	for _, n := range []int{1, 2, 3, 7, 100} {
		rs := Layout(n)
		if len(rs) != n || rs[0].Min != "" || rs[n-1].Max != End {
			t.Fatalf("Layout(%d) does not cover the space: %v", n, rs)
		}
		for i := 1; i < n; i++ {
			if rs[i].Min != rs[i-1].Max || Compare(rs[i-1].Min, rs[i].Min) >= 0 {
				t.Fatalf("Layout(%d): ranges %v and %v are not adjacent and increasing", n, rs[i-1], rs[i])
			}
		}
		// Every key falls in exactly one range, and keys spread over all of them.
		hits := make([]int, n)
		for i := range 20 * n {
			e := EPK(lethe.PartitionKey{float64(i)}, false)
			in := 0
			for j, r := range rs {
				if r.Contains(e) {
					hits[j]++
					in++
				}
			}
			if in != 1 {
				t.Fatalf("Layout(%d): EPK %s is in %d ranges", n, e, in)
			}
		}
		if slices.Contains(hits, 0) {
			t.Errorf("Layout(%d): a range holds none of %d keys: %v", n, 20*n, hits)
		}
	}
}

func TestCompare(t *testing.T) {
	cases := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "00", 0},
		{"1F", "1F00000000000000", 0},
		{"1F", "1F01", -1},
		{"2", "1FFFFFFF", 1},
		{"3FFFFFFF", End, -1},
		{"15555555555555555555555555555555", "155555555555555555555555555555550123", -1},
	}
	for _, c := range cases {
		if got := Compare(c.a, c.b); got != c.want {
			t.Errorf("Compare(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
		if got := Compare(c.b, c.a); got != -c.want {
			t.Errorf("Compare(%q, %q) = %d, want %d", c.b, c.a, got, -c.want)
		}
	}
	r := Range{Min: "15", Max: "2A"}
	if !r.Contains("15") || !r.Contains("1500") || r.Contains("2A") || r.Contains("14FF") {
		t.Error("Contains is not [Min, Max)")
	}
	if !r.Overlaps("", "16") || r.Overlaps("2A", End) || r.Overlaps("", "15") {
		t.Error("Overlaps is not the intersection of half-open ranges")
	}
}

func TestForThroughput(t *testing.T) {
	for tp, want := range map[int]int{0: 1, 400: 1, 10_000: 1, 10_100: 2, 20_000: 2, 1_000_000: 100} {
		if got := ForThroughput(tp); got != want {
			t.Errorf("ForThroughput(%d) = %d, want %d", tp, got, want)
		}
	}
}
