package jsonv

import (
	"encoding/binary"
	"math/bits"
)

// Strings are scanned eight bytes at a time: documents carry long strings
// (text, identifiers, encoded payloads) and each write parses its body once
// and encodes it once, byte by byte before (about 4% of a server's CPU under
// creates of 1 KB documents). The tests in swar_test.go hold each scan to the
// byte loop it shortcuts.

const (
	swarOnes  = 0x0101010101010101
	swarHighs = 0x8080808080808080
)

// swarLess flags, in the high bit of each byte, the bytes of w below n
// (n <= 0x80). A byte above a flagged one may be flagged wrongly (the
// subtraction borrows), never one below it: the lowest flag is exact.
func swarLess(w uint64, n byte) uint64 { return (w - swarOnes*uint64(n)) & ^w & swarHighs }

// swarEqual flags the bytes of w equal to c, with swarLess's caveat.
func swarEqual(w uint64, c byte) uint64 { return swarLess(w^(swarOnes*uint64(c)), 1) }

// stringStop returns how many bytes at the start of b a JSON string's
// content can take as they are: the index of the first quote, backslash or
// control character, or len(b). Bytes beyond ASCII are taken (the parser
// checks UTF-8 once the string ends).
func stringStop(b []byte) int {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		if m := swarLess(w, 0x20) | swarEqual(w, '"') | swarEqual(w, '\\'); m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c < 0x20 || c == '"' || c == '\\' {
			return i
		}
	}
	return i
}

// plainPrefix returns the length of the longest prefix of s that
// AppendString copies as it is: printable ASCII other than the quote and the
// backslash.
func plainPrefix(s string) int {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		w := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if m := swarLess(w, 0x20) | swarEqual(w, '"') | swarEqual(w, '\\') | w&swarHighs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return i
		}
	}
	return i
}
