package query

import (
	"time"

	"github.com/lethe-db/lethe/jsonv"
)

// Functions of the current time. They read Env.Now, the query's one instant,
// so every row sees the same value and the Static variants, which Cosmos DB
// evaluates once per partition, equal the others. Evaluating one with no
// Now set is an error, not a guess at the time.
func init() {
	register(
		nowFunction("GetCurrentDateTime", 0, 0, currentDateTime),
		nowFunction("GetCurrentDateTimeStatic", 0, 0, currentDateTime),
		nowFunction("GetCurrentTimestamp", 0, 0, currentTimestamp),
		nowFunction("GetCurrentTimestampStatic", 0, 0, currentTimestamp),
		nowFunction("GetCurrentTicks", 0, 0, currentTicks),
		nowFunction("GetCurrentTicksStatic", 0, 0, currentTicks),
		// NOW() is GetCurrentDateTime(); NOW(part, n) adds n parts to it, as
		// DateTimeAdd does. NOW(part) alone gives undefined.
		nowFunction("NOW", 0, 2, func(now time.Time, args []jsonv.Value) jsonv.Value {
			return nowOffset(now, args, 1)
		}),
		// AGO(part, n) is NOW(part, -n).
		nowFunction("AGO", 2, 2, func(now time.Time, args []jsonv.Value) jsonv.Value {
			return nowOffset(now, args, -1)
		}),
	)
}

// A nowFunc is a built-in function of the query's instant and its arguments.
type nowFunc func(now time.Time, args []jsonv.Value) jsonv.Value

func nowFunction(name string, minArgs, maxArgs int, f nowFunc) *function {
	return &function{name: name, minArgs: minArgs, maxArgs: maxArgs, callNow: f,
		// Only reached by a caller that bypasses callFunction.
		call: func([]jsonv.Value) jsonv.Value { return undefined }}
}

// callFunction applies fn to evaluated arguments, giving the functions of
// the current time the environment's instant.
func (e *evaluator) callFunction(x *CallExpr, fn *function, args []jsonv.Value) (jsonv.Value, error) {
	if fn.callNow == nil {
		return fn.call(args), nil
	}
	if e.env.Now.IsZero() {
		return nil, e.errorf(x.Fun.NamePos, "function "+fn.name+" needs the query time, which is not set")
	}
	return fn.callNow(e.env.Now, args), nil
}

// nowTicks returns now in ticks since 0001-01-01, truncated to a tick.
func nowTicks(now time.Time) (int64, bool) {
	ticks := unixEpochTicks + now.Unix()*ticksPerSecond + int64(now.Nanosecond())/100
	return ticks, ticks >= 0 && ticks <= maxTicks
}

func currentDateTime(now time.Time, _ []jsonv.Value) jsonv.Value {
	return dateValue(nowTicks(now))
}

// currentTimestamp is milliseconds since the Unix epoch.
func currentTimestamp(now time.Time, _ []jsonv.Value) jsonv.Value {
	return intNumber(now.UnixMilli())
}

// currentTicks is 100-nanosecond ticks since the Unix epoch.
func currentTicks(now time.Time, _ []jsonv.Value) jsonv.Value {
	return intNumber(now.Unix()*ticksPerSecond + int64(now.Nanosecond())/100)
}

func nowOffset(now time.Time, args []jsonv.Value, sign int64) jsonv.Value {
	t, ok := nowTicks(now)
	if !ok || len(args) == 1 {
		return undefined
	}
	if len(args) == 0 {
		return formatDateTime(t)
	}
	part, ok1 := argPart(args[0])
	n, ok2 := argInt64(args[1])
	if !ok1 || !ok2 || (sign < 0 && n == -1<<63) {
		return undefined
	}
	return dateValue(addDatePart(t, part, sign*n))
}
