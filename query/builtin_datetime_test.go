package query

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/lethe-db/lethe/jsonv"
)

// TestDateTimeRoundTrip checks parseDateTime, formatDateTime and fieldsOf
// against the time package over random instants from year 1 to 9999.
func TestDateTimeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []int64{0, 1, unixEpochTicks, windowsEpochTicks, maxTicks, maxTicks - 1, ticksPerDay - 1}
	for range 10000 {
		cases = append(cases, r.Int64N(maxTicks+1))
	}
	for _, ticks := range cases {
		s := formatDateTime(ticks)
		sec := ticks/ticksPerSecond - unixEpochTicks/ticksPerSecond
		want := time.Unix(sec, ticks%ticksPerSecond*100).UTC()
		if got := want.Format("2006-01-02T15:04:05.0000000Z"); s != got {
			t.Fatalf("formatDateTime(%d) = %s; want %s", ticks, s, got)
		}
		back, ok := parseDateTime(s)
		if !ok || back != ticks {
			t.Fatalf("parseDateTime(%s) = %d, %v; want %d", s, back, ok, ticks)
		}
		f := fieldsOf(ticks)
		if f.year != want.Year() || f.month != int(want.Month()) || f.day != want.Day() ||
			f.hour != want.Hour() || f.minute != want.Minute() || f.second != want.Second() ||
			f.frac != want.Nanosecond()/100 {
			t.Fatalf("fieldsOf(%d) = %+v; want %v", ticks, f, want)
		}
	}
}

func TestParseDateTime(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" means invalid
	}{
		{"2023-03-06", "2023-03-06T00:00:00.0000000Z"},
		{"2023-03-06Z", "2023-03-06T00:00:00.0000000Z"},
		{"2023-03-06 15:29:00Z", "2023-03-06T15:29:00.0000000Z"},
		{"2023-03-06T15:29:59", "2023-03-06T15:29:59.0000000Z"},
		{"2023-03-06T15:29:59.9", "2023-03-06T15:29:59.9000000Z"},
		{"2023-03-06T15:29:59.0000001Z", "2023-03-06T15:29:59.0000001Z"},
		{"0001-01-01T00:00:00Z", "0001-01-01T00:00:00.0000000Z"},
		{"9999-12-31T23:59:59.9999999Z", "9999-12-31T23:59:59.9999999Z"},
		{"2000-02-29", "2000-02-29T00:00:00.0000000Z"},
		{"1900-02-29", ""},
		{"2023-03-06T15:29:59.12345678", ""},
		{"2023-03-06T15:29:59.", ""},
		{"2023-03-06T15:29:59.Z", ""},
		{"2023-03-06T15:29:5", ""},
		{"2023-03-06T15:29", ""},
		{"2023-03-06T", ""},
		{"2023-03-06ZZ", ""},
		{"2023-03-06T15:29:59ZZ", ""},
		{"2023-03-06t15:29:59", ""},
		{"2023-03-06T15:29:60", ""},
		{"2023-03-06T15:60:00", ""},
		{"2023-03-00", ""},
		{"2023-00-06", ""},
		{"+023-03-06", ""},
		{"2023/03/06", ""},
		{"2023-3-6", ""},
		{"２０２３-03-06", ""},
		{"", ""},
		{"2023-03-06T15:29:59-00:00", ""},
	}
	for _, tt := range tests {
		ticks, ok := parseDateTime(tt.in)
		got := ""
		if ok {
			got = formatDateTime(ticks)
		}
		if got != tt.want {
			t.Errorf("parseDateTime(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestAddMonthsClamps(t *testing.T) {
	tests := []struct {
		from string
		n    int64
		want string
	}{
		{"2020-01-31T10:00:00Z", 1, "2020-02-29T10:00:00.0000000Z"},
		{"2021-01-31T10:00:00Z", 1, "2021-02-28T10:00:00.0000000Z"},
		{"2020-03-31", -1, "2020-02-29T00:00:00.0000000Z"},
		{"2020-05-31", 1, "2020-06-30T00:00:00.0000000Z"},
		{"2020-12-15", 1, "2021-01-15T00:00:00.0000000Z"},
		{"2020-01-15", -1, "2019-12-15T00:00:00.0000000Z"},
		{"2020-01-15", -24, "2018-01-15T00:00:00.0000000Z"},
		{"0001-01-31", -1, ""},
		{"9999-12-01", 1, ""},
	}
	for _, tt := range tests {
		from, ok := parseDateTime(tt.from)
		if !ok {
			t.Fatalf("bad test date %q", tt.from)
		}
		to, ok := addMonths(from, tt.n)
		got := ""
		if ok {
			got = formatDateTime(to)
		}
		if got != tt.want {
			t.Errorf("addMonths(%s, %d) = %q; want %q", tt.from, tt.n, got, tt.want)
		}
	}
}

// TestNowFunctions covers what testdata/now cannot: instants outside the
// years a date string can show.
func TestNowFunctions(t *testing.T) {
	far := time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)
	if v := currentDateTime(far, nil); !isUndefined(v) {
		t.Errorf("GetCurrentDateTime in year 10000 = %v; want undefined", v)
	}
	if v := currentTimestamp(far, nil); v != jsonv.Number("253402300800000") {
		t.Errorf("GetCurrentTimestamp in year 10000 = %v", v)
	}
	if v := currentTicks(far, nil); v != jsonv.Number("2534023008000000000") {
		t.Errorf("GetCurrentTicks in year 10000 = %v", v)
	}
	local := time.Date(2024, 1, 1, 1, 0, 0, 0, time.FixedZone("X", 3600))
	if v := currentDateTime(local, nil); v != "2024-01-01T00:00:00.0000000Z" {
		t.Errorf("GetCurrentDateTime from a +01:00 time = %v; want UTC", v)
	}
	if v := nowOffset(local, []jsonv.Value{"dd", jsonv.Number("-9223372036854775808")}, -1); !isUndefined(v) {
		t.Errorf("AGO by MinInt64 = %v; want undefined", v)
	}
}

// TestEvalNowUnset: the functions of the current time fail without Env.Now,
// with the call's position.
func TestEvalNowUnset(t *testing.T) {
	src := "1 + GetCurrentTicks()"
	x, err := parseExprSource(src)
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Eval(x, &Env{Source: src})
	if err == nil || err.Error() != "1:5: function GetCurrentTicks needs the query time, which is not set" {
		t.Errorf("err = %v", err)
	}
	_, _, err = Eval(x, nil)
	if err == nil {
		t.Error("Eval with a nil Env succeeded")
	}
}
