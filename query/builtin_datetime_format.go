package query

import (
	"strings"

	"github.com/lethe-db/lethe/jsonv"
)

func init() {
	register(&function{name: "DateTimeFormat", minArgs: 2, maxArgs: 2, call: dateTimeFormat})
}

var (
	monthNames = [...]string{"January", "February", "March", "April", "May", "June", "July",
		"August", "September", "October", "November", "December"}
	dayNames = [...]string{"Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"}
)

// dateTimeFormat is DateTimeFormat(date, format): date written with a .NET
// custom date and time format string in the invariant culture:
//
//	yyyy yy y        year (at least four digits, two digits, unpadded two)
//	MMMM MMM MM M    month (name, abbreviation, two digits, unpadded)
//	dddd ddd dd d    day (weekday name, abbreviation, two digits, unpadded)
//	HH H hh h        hour (24-hour, 12-hour)
//	mm m ss s        minute, second
//	f... F...        1 to 7 fractional digits; F drops trailing zeros
//	tt t             AM/PM, A/P
//	K zzz zz z       the UTC offset: "Z", "+00:00", "+00", "+0"
//	\c 'text' "text" literal text; any other character is itself
//
// As in Cosmos DB, an all-zero F field leaves a preceding '.' in place:
// "ss.FFF" gives "20." where .NET gives "20". Every format string is read as
// a custom one; .NET's one-letter standard formats ("d", "o") are not
// supported.
func dateTimeFormat(args []jsonv.Value) jsonv.Value {
	t, ok1 := argDateTime(args[0])
	format, ok2 := argString(args[1])
	if !ok1 || !ok2 {
		return undefined
	}
	f := fieldsOf(t)
	var b []byte
	for i := 0; i < len(format); {
		c := format[i]
		n := 1 // length of the run of c
		for i+n < len(format) && format[i+n] == c {
			n++
		}
		switch c {
		case 'y':
			switch {
			case n == 1:
				b = appendDigits(b, f.year%100, 1)
			case n == 2:
				b = appendDigits(b, f.year%100, 2)
			default:
				b = appendDigits(b, f.year, n)
			}
		case 'M':
			switch {
			case n >= 4:
				b = append(b, monthNames[f.month-1]...)
			case n == 3:
				b = append(b, monthNames[f.month-1][:3]...)
			default:
				b = appendDigits(b, f.month, n)
			}
		case 'd':
			weekday := int((t/ticksPerDay + 1) % 7) // 0001-01-01 was a Monday
			switch {
			case n >= 4:
				b = append(b, dayNames[weekday]...)
			case n == 3:
				b = append(b, dayNames[weekday][:3]...)
			default:
				b = appendDigits(b, f.day, n)
			}
		case 'H':
			b = appendDigits(b, f.hour, min(n, 2))
		case 'h':
			b = appendDigits(b, (f.hour+11)%12+1, min(n, 2))
		case 'm':
			b = appendDigits(b, f.minute, min(n, 2))
		case 's':
			b = appendDigits(b, f.second, min(n, 2))
		case 'f', 'F':
			if n > 7 {
				return undefined // .NET rejects more than seven
			}
			digits := appendDigits(nil, f.frac, 7)[:n]
			if c == 'F' {
				digits = []byte(strings.TrimRight(string(digits), "0"))
			}
			b = append(b, digits...)
		case 't':
			ampm := "AM"
			if f.hour >= 12 {
				ampm = "PM"
			}
			b = append(b, ampm[:min(n, 2)]...)
		case 'K':
			b = append(b, strings.Repeat("Z", n)...)
		case 'z':
			b = append(b, [...]string{"+0", "+00", "+00:00"}[min(n, 3)-1]...)
		case '\\':
			if i+1 >= len(format) {
				return undefined // .NET rejects a trailing backslash
			}
			b = append(b, format[i+1])
			n = 2
		case '\'', '"':
			end := strings.IndexByte(format[i+1:], c)
			if end < 0 {
				return undefined // unterminated quote
			}
			b = append(b, format[i+1:i+1+end]...)
			n = end + 2
		case '%':
			n = 1 // marks a lone specifier; prints nothing
		default:
			b = append(b, format[i:i+n]...)
		}
		i += n
	}
	return string(b)
}
