package query

import "fmt"

// Pos is a byte offset into the source text, the compact position every AST
// node records. Convert it to a line and column with PositionFor.
type Pos int

// NoPos marks a node that has no source position (one built by code, not parsed).
const NoPos Pos = -1

// IsValid reports whether p is a real source position.
func (p Pos) IsValid() bool { return p >= 0 }

// Position is a human-readable source location. Line and Column are 1-based;
// Column counts bytes, as go/token does.
type Position struct {
	Offset int // byte offset, from 0
	Line   int // line number, from 1
	Column int // byte column within the line, from 1
}

// IsValid reports whether the position is known.
func (p Position) IsValid() bool { return p.Line > 0 }

// String formats the position as "line:column", or "-" if it is unknown.
func (p Position) String() string {
	if !p.IsValid() {
		return "-"
	}
	return fmt.Sprintf("%d:%d", p.Line, p.Column)
}

// PositionFor converts offset p in src to a line and column. Offsets past the
// end of src are clamped to it; NoPos gives the zero Position.
func PositionFor(src string, p Pos) Position {
	if !p.IsValid() {
		return Position{}
	}
	off := min(int(p), len(src))
	line, lineStart := 1, 0
	for i := 0; i < off; i++ {
		if src[i] == '\n' {
			line++
			lineStart = i + 1
		}
	}
	return Position{Offset: off, Line: line, Column: off - lineStart + 1}
}
