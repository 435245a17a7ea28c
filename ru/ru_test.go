package ru

import "testing"

func TestPublishedFigures(t *testing.T) {
	tests := []struct {
		name   string
		got    float64
		lo, hi float64
	}{
		{"1 KB point read", Read(1024), 1, 1},
		{"small point read", Read(200), 1, 1},
		{"100 KB point read", Read(100 << 10), 9, 11},
		{"1 KB create, default indexing (10 terms)", Write{Bytes: 1024, TermsWritten: 10}.Charge(), 5, 6},
		{"1 KB create, indexing off", Write{Bytes: 1024}.Charge(), 2.5, 3.5},
		{"1 KB replace, default indexing", Write{Bytes: 1024, TermsWritten: 10, TermsRemoved: 10}.Charge(), 7.5, 8.5},
		{"query of 10 indexed 1 KB rows", Query{IndexEntries: 10, Documents: 10, BytesLoaded: 10 << 10, BytesReturned: 10 << 10}.Charge(), 3, 5},
	}
	for _, tt := range tests {
		if tt.got < tt.lo || tt.got > tt.hi {
			t.Errorf("%s: %v RU, want %v..%v", tt.name, tt.got, tt.lo, tt.hi)
		}
	}
}

func TestMonotone(t *testing.T) {
	for n := 0; n < 4<<20; n += 977 {
		if Read(n+977) < Read(n) {
			t.Fatalf("Read(%d) < Read(%d)", n+977, n)
		}
		if (Write{Bytes: n + 977}).Charge() < (Write{Bytes: n}).Charge() {
			t.Fatalf("Write(%d) < Write(%d)", n+977, n)
		}
	}
	if (Write{Bytes: 1024, TermsWritten: 11}).Charge() <= (Write{Bytes: 1024, TermsWritten: 10}).Charge() {
		t.Fatal("an extra index term costs nothing")
	}
	if (Query{Documents: 1000}).Charge() <= (Query{Documents: 10}).Charge() {
		t.Fatal("loading more documents costs nothing")
	}
	if Feed(10, 10<<10) <= Feed(1, 1<<10) {
		t.Fatal("a bigger feed page costs nothing more")
	}
}

func TestChargesArePositiveAndRounded(t *testing.T) {
	for _, c := range []float64{Read(0), Write{}.Charge(), Query{}.Charge(), Feed(0, 0), Read(12345), Write{Bytes: 3333, TermsWritten: 7}.Charge()} {
		if c <= 0 {
			t.Errorf("charge %v is not positive", c)
		}
		if Round(c) != c {
			t.Errorf("charge %v has more than two decimals", c)
		}
	}
}

func TestQueryAdd(t *testing.T) {
	q := Query{IndexEntries: 1, Documents: 2, BytesLoaded: 3, BytesReturned: 4}
	q.Add(Query{IndexEntries: 10, Documents: 20, BytesLoaded: 30, BytesReturned: 40})
	if want := (Query{IndexEntries: 11, Documents: 22, BytesLoaded: 33, BytesReturned: 44}); q != want {
		t.Errorf("sum %+v, want %+v", q, want)
	}
}
