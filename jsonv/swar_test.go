package jsonv

import (
	"bytes"
	"strings"
	"testing"
)

// stringStopLoop and plainPrefixLoop are the byte loops stringStop and
// plainPrefix shortcut.
func stringStopLoop(b []byte) int {
	for i, c := range b {
		if c < 0x20 || c == '"' || c == '\\' {
			return i
		}
	}
	return len(b)
}

func plainPrefixLoop(s string) int {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= 0x80 {
			return i
		}
	}
	return len(s)
}

// checkScans holds both scans of b to their byte loops.
func checkScans(t *testing.T, b []byte) {
	t.Helper()
	if got, want := stringStop(b), stringStopLoop(b); got != want {
		t.Fatalf("stringStop(%q) = %d, want %d", b, got, want)
	}
	if got, want := plainPrefix(string(b)), plainPrefixLoop(string(b)); got != want {
		t.Fatalf("plainPrefix(%q) = %d, want %d", b, got, want)
	}
}

// Every byte value at every position of a 19-byte string (two words and a
// tail) filled with plain bytes, bytes beyond ASCII or bytes just above a
// bound (0x21, 0x7f), then with a stop or a byte that borrows (0x00, 0x20)
// right after it or at the end: the first stop is found exactly, whatever
// follows it.
func TestScansFindTheFirstStop(t *testing.T) {
	for _, fill := range []byte{'x', 0xe9, 0x21, 0x7f} {
		for pos := range 19 {
			for c := range 256 {
				b := bytes.Repeat([]byte{fill}, 19)
				b[pos] = byte(c)
				checkScans(t, b)
				for _, after := range []byte{0x00, 0x1f, '"', '\\', 0x80, 0x20} {
					if pos+1 < len(b) {
						b2 := append([]byte(nil), b...)
						b2[pos+1] = after
						checkScans(t, b2)
						b2[len(b2)-1] = after
						checkScans(t, b2)
					}
				}
			}
		}
	}
	for n := range 40 {
		checkScans(t, []byte(strings.Repeat("a", n)))
	}
}

// FuzzScans: the scans agree with their byte loops on any input.
func FuzzScans(f *testing.F) {
	for _, s := range []string{"", "plain", `abc"def`, "abcdefgh\\ijk", "éèêë\x01", "\x00\x00\x00\x00\x00\x00\x00\x00\"", "!!!!!!!! \x1f"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkScans(t, b) })
}
