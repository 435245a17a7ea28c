package query

import (
	"math"
	"math/big"

	"github.com/lethe-db/lethe/jsonv"
)

// Date and time functions. Cosmos DB has no date type: dates are strings in
// ISO 8601 form, read by parseDateTime and written as
// "YYYY-MM-DDThh:mm:ss.fffffffZ", always UTC with seven fractional digits.
// Internally a date is a count of ticks, 100-nanosecond intervals, since
// 0001-01-01T00:00:00Z (.NET's DateTime.Ticks), so every date from year 1 to
// 9999 is exact in an int64. Functions that take or return "ticks" or a
// "timestamp" count from the Unix epoch instead, in ticks or milliseconds.
//
// A malformed date, an unknown part name, a count that is not a whole number
// or a result outside years 1 to 9999 gives undefined.
func init() {
	register(
		&function{name: "DateTimeAdd", minArgs: 3, maxArgs: 3, call: dateTimeAdd},
		&function{name: "DateTimeBin", minArgs: 2, maxArgs: 4, call: dateTimeBin},
		&function{name: "DateTimeDiff", minArgs: 3, maxArgs: 3, call: dateTimeDiff},
		&function{name: "DateTimeFromParts", minArgs: 3, maxArgs: 7, call: dateTimeFromParts},
		&function{name: "DateTimePart", minArgs: 2, maxArgs: 2, call: dateTimePart},
		&function{name: "DateTimeToTicks", minArgs: 1, maxArgs: 1, call: func(args []jsonv.Value) jsonv.Value {
			t, ok := argDateTime(args[0])
			if !ok {
				return undefined
			}
			return intNumber(t - unixEpochTicks)
		}},
		&function{name: "DateTimeToTimestamp", minArgs: 1, maxArgs: 1, call: func(args []jsonv.Value) jsonv.Value {
			t, ok := argDateTime(args[0])
			if !ok {
				return undefined
			}
			return intNumber(t/ticksPerMillisecond - unixEpochTicks/ticksPerMillisecond)
		}},
		&function{name: "TicksToDateTime", minArgs: 1, maxArgs: 1, call: func(args []jsonv.Value) jsonv.Value {
			return fromEpoch(args[0], 1)
		}},
		&function{name: "TimestampToDateTime", minArgs: 1, maxArgs: 1, call: func(args []jsonv.Value) jsonv.Value {
			return fromEpoch(args[0], ticksPerMillisecond)
		}},
		datePartFunc("YEAR", partYear),
		datePartFunc("MONTH", partMonth),
		datePartFunc("DAY", partDay),
	)
}

// addDatePart adds n units of part to t. Adding months or years keeps the
// day of the month where it can and otherwise uses the month's last day, as
// .NET's AddMonths does: 2020-01-31 plus one month is 2020-02-29. Adding
// nanoseconds adds whole ticks, truncating toward zero.
func addDatePart(t int64, part datePart, n int64) (int64, bool) {
	switch part {
	case partYear:
		if n > 10000 || n < -10000 {
			return 0, false
		}
		return addMonths(t, n*12)
	case partMonth:
		if n > 120000 || n < -120000 {
			return 0, false
		}
		return addMonths(t, n)
	case partNanosecond:
		return addTicks(t, n/100, 1)
	}
	return addTicks(t, n, unitTicks[part])
}

func addMonths(t, n int64) (int64, bool) {
	f := fieldsOf(t)
	m := int64(f.year)*12 + int64(f.month-1) + n
	year, month := int(m/12), int(m%12)+1
	if m < 0 || year < 1 || year > 9999 {
		return 0, false
	}
	day := min(f.day, daysIn(year, month))
	return civilTicks(year, month, day) + t%ticksPerDay, true
}

// dateTimeAdd is DateTimeAdd(part, n, date).
func dateTimeAdd(args []jsonv.Value) jsonv.Value {
	part, ok1 := argPart(args[0])
	n, ok2 := argInt64(args[1])
	t, ok3 := argDateTime(args[2])
	if !ok1 || !ok2 || !ok3 {
		return undefined
	}
	return dateValue(addDatePart(t, part, n))
}

// dateTimeDiff is DateTimeDiff(part, start, end): the number of part
// boundaries crossed going from start to end, negative if end is earlier.
// DateTimeDiff("yyyy", "2018-12-31", "2019-01-01") is 1, although only a
// day passes.
func dateTimeDiff(args []jsonv.Value) jsonv.Value {
	part, ok1 := argPart(args[0])
	start, ok2 := argDateTime(args[1])
	end, ok3 := argDateTime(args[2])
	if !ok1 || !ok2 || !ok3 {
		return undefined
	}
	switch part {
	case partYear:
		return intNumber(int64(fieldsOf(end).year - fieldsOf(start).year))
	case partMonth:
		s, e := fieldsOf(start), fieldsOf(end)
		return intNumber(int64((e.year-s.year)*12 + e.month - s.month))
	case partNanosecond:
		d := end - start
		if d > math.MaxInt64/100 || d < math.MinInt64/100 {
			return number(float64(d) * 100)
		}
		return intNumber(d * 100)
	}
	u := unitTicks[part]
	return intNumber(end/u - start/u) // ticks are never negative
}

// dateTimeBin is DateTimeBin(date, part [, size [, origin]]): date rounded
// down to a multiple of size parts (default 1) counted from origin (default
// the Unix epoch). Parts from day to nanosecond are allowed; size must be a
// positive whole number and origin no earlier than 1601-01-01.
func dateTimeBin(args []jsonv.Value) jsonv.Value {
	t, ok1 := argDateTime(args[0])
	part, ok2 := argPart(args[1])
	if !ok1 || !ok2 || part == partYear || part == partMonth {
		return undefined
	}
	size, origin := int64(1), int64(unixEpochTicks)
	if len(args) > 2 {
		var ok bool
		if size, ok = argInt64(args[2]); !ok || size <= 0 {
			return undefined
		}
	}
	if len(args) > 3 {
		var ok bool
		if origin, ok = argDateTime(args[3]); !ok || origin < windowsEpochTicks {
			return undefined
		}
	}
	diff := t - origin
	if part == partNanosecond {
		if size%100 != 0 {
			// Work in nanoseconds, which can exceed an int64.
			ns := new(big.Int).Mul(big.NewInt(diff), big.NewInt(100))
			bin := big.NewInt(size)
			ns.Div(ns, bin).Mul(ns, bin) // big.Int.Div rounds toward -inf for positive divisors
			ns.Div(ns, big.NewInt(100))
			return dateValue(origin+ns.Int64(), true)
		}
		return dateValue(binTicks(origin, diff, size/100, 1)) // a whole number of ticks
	}
	return dateValue(binTicks(origin, diff, size, unitTicks[part]))
}

// binTicks returns origin + floor(diff / (size*unit)) * size*unit.
func binTicks(origin, diff, size, unit int64) (int64, bool) {
	if size > maxTicks/unit {
		// One bin spans every date: only the origin's own bin is in range.
		return origin, diff >= 0
	}
	bin := size * unit
	q := diff / bin
	if diff%bin < 0 {
		q--
	}
	return origin + q*bin, true
}

// dateTimeFromParts is DateTimeFromParts(year, month, day [, hour [, minute
// [, second [, fraction]]]]), the fraction in ticks (0 to 9999999):
// DateTimeFromParts(2017, 4, 20, 13, 15, 20, 3456789) is
// "2017-04-20T13:15:20.3456789Z". Every argument must be a whole number in
// its field's range.
func dateTimeFromParts(args []jsonv.Value) jsonv.Value {
	var v [7]int64
	limits := [7][2]int64{{1, 9999}, {1, 12}, {1, 31}, {0, 23}, {0, 59}, {0, 59}, {0, ticksPerSecond - 1}}
	for i, a := range args {
		n, ok := argInt64(a)
		if !ok || n < limits[i][0] || n > limits[i][1] {
			return undefined
		}
		v[i] = n
	}
	if int(v[2]) > daysIn(int(v[0]), int(v[1])) {
		return undefined
	}
	return formatDateTime(civilTicks(int(v[0]), int(v[1]), int(v[2])) +
		v[3]*ticksPerHour + v[4]*ticksPerMinute + v[5]*ticksPerSecond + v[6])
}

// datePartOf returns one field of ticks; sub-second parts count within the
// second: DateTimePart("ms", "2016-05-29T08:30:00.1301617") is 130, "mcs"
// 130161 and "ns" 130161700.
func datePartOf(ticks int64, part datePart) int64 {
	f := fieldsOf(ticks)
	switch part {
	case partYear:
		return int64(f.year)
	case partMonth:
		return int64(f.month)
	case partDay:
		return int64(f.day)
	case partHour:
		return int64(f.hour)
	case partMinute:
		return int64(f.minute)
	case partSecond:
		return int64(f.second)
	case partMillisecond:
		return int64(f.frac / ticksPerMillisecond)
	case partMicrosecond:
		return int64(f.frac / ticksPerMicrosecond)
	}
	return int64(f.frac) * 100
}

// dateTimePart is DateTimePart(part, date).
func dateTimePart(args []jsonv.Value) jsonv.Value {
	part, ok1 := argPart(args[0])
	t, ok2 := argDateTime(args[1])
	if !ok1 || !ok2 {
		return undefined
	}
	return intNumber(datePartOf(t, part))
}

// datePartFunc makes YEAR, MONTH and DAY: DateTimePart with a fixed part.
func datePartFunc(name string, part datePart) *function {
	return &function{name: name, minArgs: 1, maxArgs: 1, call: func(args []jsonv.Value) jsonv.Value {
		t, ok := argDateTime(args[0])
		if !ok {
			return undefined
		}
		return intNumber(datePartOf(t, part))
	}}
}

// fromEpoch converts a count of units (ticks or milliseconds) since the Unix
// epoch to a date string; a fractional count is truncated to whole ticks.
func fromEpoch(v jsonv.Value, unit int64) jsonv.Value {
	if n, ok := argInt64(v); ok {
		return dateValue(addTicks(unixEpochTicks, n, unit))
	}
	f, ok := argNumber(v)
	if !ok {
		return undefined
	}
	f = math.Trunc(f * float64(unit))
	if f < -unixEpochTicks || f > maxTicks-unixEpochTicks {
		return undefined
	}
	return dateValue(unixEpochTicks+int64(f), true)
}
