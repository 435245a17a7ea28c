package query

// Error is a syntax or evaluation error at a position in the query text. It
// prints like go/parser's errors, "line:column: message", so a client sees
// where its condition went wrong:
//
//	1:30: expected expression, found ')'
type Error struct {
	Pos Position // where the problem is; the zero Position if unknown
	Msg string   // what is wrong, lower case, no trailing period
}

// Error implements the error interface.
func (e *Error) Error() string {
	if !e.Pos.IsValid() {
		return e.Msg
	}
	return e.Pos.String() + ": " + e.Msg
}
