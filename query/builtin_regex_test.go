package query

import (
	"fmt"
	"testing"
)

func TestStripExtended(t *testing.T) {
	tests := []struct{ in, want string }{
		{"a b", "ab"},
		{" a\tb\n", "ab"},
		{`a\ b`, `a\ b`},
		{"a # comment\nb", "ab"},
		{"a # comment to the end", "a"},
		{`a\#b`, `a\#b`},
		{"[ a#]", "[ a#]"},
		{"[] ]", "[] ]"},
		{"[^] ] x", "[^] ]x"},
		{"[[:alpha:] ] x", "[[:alpha:] ]x"},
		{`[\] ] x`, `[\] ]x`},
		{`\Q a b \E c`, `\Q a b \E` + "c"},
		{`\Q a b`, `\Q a b`},
		{"[ unterminated", "[ unterminated"},
		{`trailing\`, `trailing\`},
	}
	for _, tt := range tests {
		if got := stripExtended(tt.in); got != tt.want {
			t.Errorf("stripExtended(%q) = %q; want %q", tt.in, got, tt.want)
		}
	}
}

func TestRegexCache(t *testing.T) {
	a := compileRegex("h(e|a)llo", "i")
	if a == nil || compileRegex("h(e|a)llo", "i") != a {
		t.Fatal("a compiled pattern is not reused")
	}
	if compileRegex("h(e|a)llo", "") == a {
		t.Error("modifiers are not part of the cache key")
	}
	if compileRegex("(", "") != nil {
		t.Error("an invalid pattern compiled")
	}
	if compileRegex("(", "") != nil {
		t.Error("an invalid pattern compiled from the cache")
	}
	if compileRegex("a", "q") != nil {
		t.Error("an unknown modifier was accepted")
	}
	for i := range 2 * maxCachedRegexes {
		compileRegex(fmt.Sprint(i), "")
	}
	regexCache.Lock()
	n := len(regexCache.m)
	regexCache.Unlock()
	if n > maxCachedRegexes {
		t.Errorf("the cache holds %d patterns; the limit is %d", n, maxCachedRegexes)
	}
}
