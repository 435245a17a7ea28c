package query

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
)

// likeRegexp translates compiled LIKE items to an anchored regular
// expression, an independent matcher to check matchLike against.
func likeRegexp(items []likeItem) *regexp.Regexp {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	for _, it := range items {
		switch it.kind {
		case likeChar:
			b.WriteString(regexp.QuoteMeta(string(it.char)))
		case likeAny:
			b.WriteString(".")
		case likeRun:
			b.WriteString(".*")
		case likeClass:
			b.WriteString("[")
			if it.negate {
				b.WriteString("^")
			}
			for i := 0; i < len(it.ranges); i += 2 {
				fmt.Fprintf(&b, `\x{%x}-\x{%x}`, it.ranges[i], it.ranges[i+1])
			}
			b.WriteString("]")
		}
	}
	b.WriteString(`$`)
	return regexp.MustCompile(b.String())
}

// TestLikeAgainstRegexp checks the backtracking matcher on random inputs.
func TestLikeAgainstRegexp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(alphabet string, n int) string {
		r := []rune(alphabet)
		var b strings.Builder
		for range rng.IntN(n + 1) {
			b.WriteRune(r[rng.IntN(len(r))])
		}
		return b.String()
	}
	for i := 0; i < 20000; i++ {
		pattern := gen("ab%_[]^-!é", 8)
		s := gen("ab-!é[", 8)
		items := compileLike(pattern, '!')
		for _, it := range items {
			if it.kind == likeClass {
				for j := 0; j < len(it.ranges); j += 2 {
					if it.ranges[j] > it.ranges[j+1] {
						goto skip // an inverted range, which regexp rejects
					}
				}
			}
		}
		if got, want := matchLike(s, pattern, '!'), likeRegexp(items).MatchString(s); got != want {
			t.Fatalf("%q LIKE %q ESCAPE '!' = %v; regexp says %v", s, pattern, got, want)
		}
	skip:
	}
}

func TestLikeNoEscape(t *testing.T) {
	// Without ESCAPE, no character is special beyond % _ [.
	if !matchLike(`a\b`, `a\b`, -1) || !matchLike("a!", "a!", -1) {
		t.Error("backslash or ! treated as an escape without ESCAPE")
	}
}
