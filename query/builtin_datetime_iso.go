package query

import (
	"strings"
	"time"

	"github.com/lethe-db/lethe/jsonv"
)

// The representation of dates for the date and time functions: ISO 8601
// strings outside, ticks since 0001-01-01 inside.

const (
	ticksPerMicrosecond = 10
	ticksPerMillisecond = 10_000
	ticksPerSecond      = 10_000_000
	ticksPerMinute      = 60 * ticksPerSecond
	ticksPerHour        = 60 * ticksPerMinute
	ticksPerDay         = 24 * ticksPerHour

	// unixEpochTicks is 1970-01-01T00:00:00Z.
	unixEpochTicks = 621_355_968_000_000_000
	// windowsEpochTicks is 1601-01-01T00:00:00Z, the earliest DateTimeBin origin.
	windowsEpochTicks = 504_911_232_000_000_000
	// maxTicks is 9999-12-31T23:59:59.9999999Z, the last representable instant.
	maxTicks = 3_155_378_975_999_999_999
)

// A datePart is a unit named by a date and time part argument.
type datePart int

const (
	partYear datePart = iota
	partMonth
	partDay
	partHour
	partMinute
	partSecond
	partMillisecond
	partMicrosecond
	partNanosecond
)

// partNames maps each accepted spelling, in lower case, to its part. Names
// are matched ignoring ASCII case.
var partNames = map[string]datePart{
	"year": partYear, "yyyy": partYear, "yy": partYear,
	"month": partMonth, "mm": partMonth, "m": partMonth,
	"day": partDay, "dd": partDay, "d": partDay,
	"hour": partHour, "hh": partHour,
	"minute": partMinute, "mi": partMinute, "n": partMinute,
	"second": partSecond, "ss": partSecond, "s": partSecond,
	"millisecond": partMillisecond, "ms": partMillisecond,
	"microsecond": partMicrosecond, "mcs": partMicrosecond,
	"nanosecond": partNanosecond, "ns": partNanosecond,
}

func argPart(v jsonv.Value) (datePart, bool) {
	s, ok := argString(v)
	if !ok {
		return 0, false
	}
	p, ok := partNames[strings.ToLower(s)]
	return p, ok
}

// unitTicks is the length of one unit of a part from day to microsecond.
// Years and months vary in length; a nanosecond is less than a tick.
var unitTicks = [...]int64{
	partDay:         ticksPerDay,
	partHour:        ticksPerHour,
	partMinute:      ticksPerMinute,
	partSecond:      ticksPerSecond,
	partMillisecond: ticksPerMillisecond,
	partMicrosecond: ticksPerMicrosecond,
}

// argDateTime reads a date string.
func argDateTime(v jsonv.Value) (int64, bool) {
	s, ok := argString(v)
	if !ok {
		return 0, false
	}
	return parseDateTime(s)
}

// parseDateTime reads the ISO 8601 forms Cosmos DB accepts (see IS_DATETIME):
//
//	YYYY-MM-DD
//	YYYY-MM-DDZ
//	YYYY-MM-DDThh:mm:ss[.f...][Z]    (a space may replace the T)
//
// with one to seven fractional digits. The time is always UTC; there are no
// offsets. It returns ticks since 0001-01-01.
func parseDateTime(s string) (ticks int64, ok bool) {
	digits := func(i, n int) (int, bool) {
		if i+n > len(s) {
			return 0, false
		}
		v := 0
		for _, c := range []byte(s[i : i+n]) {
			if c < '0' || c > '9' {
				return 0, false
			}
			v = v*10 + int(c-'0')
		}
		return v, true
	}
	year, ok1 := digits(0, 4)
	month, ok2 := digits(5, 2)
	day, ok3 := digits(8, 2)
	if !ok1 || !ok2 || !ok3 || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	var hour, minute, sec, frac int
	rest := s[10:]
	switch {
	case rest == "" || rest == "Z":
	case rest[0] == 'T' || rest[0] == ' ':
		var ok1, ok2, ok3 bool
		hour, ok1 = digits(11, 2)
		minute, ok2 = digits(14, 2)
		sec, ok3 = digits(17, 2)
		if !ok1 || !ok2 || !ok3 || s[13] != ':' || s[16] != ':' {
			return 0, false
		}
		rest = strings.TrimSuffix(s[19:], "Z")
		if rest != "" {
			n := len(rest) - 1
			if rest[0] != '.' || n < 1 || n > 7 {
				return 0, false
			}
			f, ok := digits(20, n)
			if !ok {
				return 0, false
			}
			for ; n < 7; n++ {
				f *= 10
			}
			frac = f
		}
	default:
		return 0, false
	}
	if year < 1 || month < 1 || month > 12 || day < 1 || day > daysIn(year, month) ||
		hour > 23 || minute > 59 || sec > 59 {
		return 0, false
	}
	return civilTicks(year, month, day) + int64(hour)*ticksPerHour + int64(minute)*ticksPerMinute +
		int64(sec)*ticksPerSecond + int64(frac), true
}

// civilTicks returns the ticks at the start of a valid date.
func civilTicks(year, month, day int) int64 {
	unix := time.Date(year, time.Month(month), day, 0, 0, 0, 0, time.UTC).Unix()
	return unixEpochTicks + unix*ticksPerSecond
}

func daysIn(year, month int) int {
	return time.Date(year, time.Month(month)+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// dateFields splits ticks into its calendar fields; frac is in ticks.
type dateFields struct {
	year, month, day, hour, minute, second, frac int
}

func fieldsOf(ticks int64) dateFields {
	days, rem := ticks/ticksPerDay, ticks%ticksPerDay
	t := time.Unix((days*ticksPerDay-unixEpochTicks)/ticksPerSecond, 0).UTC()
	return dateFields{
		year: t.Year(), month: int(t.Month()), day: t.Day(),
		hour:   int(rem / ticksPerHour),
		minute: int(rem % ticksPerHour / ticksPerMinute),
		second: int(rem % ticksPerMinute / ticksPerSecond),
		frac:   int(rem % ticksPerSecond),
	}
}

// formatDateTime writes ticks as YYYY-MM-DDThh:mm:ss.fffffffZ.
func formatDateTime(ticks int64) string {
	f := fieldsOf(ticks)
	b := make([]byte, 0, 28)
	b = appendDigits(b, f.year, 4)
	b = append(b, '-')
	b = appendDigits(b, f.month, 2)
	b = append(b, '-')
	b = appendDigits(b, f.day, 2)
	b = append(b, 'T')
	b = appendDigits(b, f.hour, 2)
	b = append(b, ':')
	b = appendDigits(b, f.minute, 2)
	b = append(b, ':')
	b = appendDigits(b, f.second, 2)
	b = append(b, '.')
	b = appendDigits(b, f.frac, 7)
	return string(append(b, 'Z'))
}

// appendDigits appends v, not negative, zero-padded to at least n digits.
func appendDigits(b []byte, v, n int) []byte {
	var buf [20]byte
	i := len(buf)
	for v > 0 || n > 0 {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		n--
	}
	return append(b, buf[i:]...)
}

// dateValue returns ticks as a date string, or undefined outside years 1 to 9999.
func dateValue(ticks int64, ok bool) jsonv.Value {
	if !ok || ticks < 0 || ticks > maxTicks {
		return undefined
	}
	return formatDateTime(ticks)
}

// addTicks returns t + n*unit, or ok false if it leaves the date range.
func addTicks(t, n, unit int64) (int64, bool) {
	if n > (maxTicks+unit-1)/unit || n < -(maxTicks+unit-1)/unit {
		return 0, false
	}
	r := t + n*unit
	return r, r >= 0 && r <= maxTicks
}
