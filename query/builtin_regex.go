package query

import (
	"regexp"
	"strings"
	"sync"

	"github.com/lethe-db/lethe/jsonv"
)

// RegexMatch(s, pattern [, modifiers]) reports whether pattern matches
// anywhere in s. The modifiers are any of m (^ and $ match at line breaks),
// s (. matches a newline), i (ignore case) and x (ignore white space and #
// comments in the pattern); "" is the same as none. A non-string argument, an
// unknown modifier or a pattern that does not compile gives undefined.
//
// Cosmos DB uses PCRE; Lethe uses Go's regexp (RE2), which guarantees time
// linear in the input but lacks some PCRE features. Patterns using them do
// not compile here, so RegexMatch gives undefined where Cosmos DB answers:
// backreferences (\1), lookahead and lookbehind ((?=, (?!, (?<=, (?<!),
// atomic groups and possessive quantifiers (a++), recursion, conditionals,
// \Z, \h, \e, \cX, and repeat counts over 1000. Two differences in meaning
// remain: without m, PCRE's $ also matches before a final newline (Go's only
// at the very end), and \s does not match a vertical tab in Go.
func init() {
	register(&function{name: "RegexMatch", minArgs: 2, maxArgs: 3, call: regexMatch})
}

func regexMatch(args []jsonv.Value) jsonv.Value {
	s, ok1 := argString(args[0])
	pattern, ok2 := argString(args[1])
	mods := ""
	ok3 := true
	if len(args) > 2 {
		mods, ok3 = argString(args[2])
	}
	if !ok1 || !ok2 || !ok3 {
		return undefined
	}
	re := compileRegex(pattern, mods)
	if re == nil {
		return undefined
	}
	return re.MatchString(s)
}

// regexCache holds compiled patterns, nil for those that do not compile, so
// a query does not recompile its pattern for every document. It is emptied
// when full rather than tracking use: queries rarely use many patterns.
var regexCache struct {
	sync.Mutex
	m map[string]*regexp.Regexp // key: modifiers, NUL, pattern
}

const maxCachedRegexes = 256

// compileRegex returns pattern compiled with PCRE-style modifiers, or nil.
func compileRegex(pattern, mods string) *regexp.Regexp {
	key := mods + "\x00" + pattern
	regexCache.Lock()
	re, ok := regexCache.m[key]
	regexCache.Unlock()
	if ok {
		return re
	}
	re = compileRegexUncached(pattern, mods)
	regexCache.Lock()
	if regexCache.m == nil || len(regexCache.m) >= maxCachedRegexes {
		regexCache.m = make(map[string]*regexp.Regexp)
	}
	regexCache.m[key] = re
	regexCache.Unlock()
	return re
}

func compileRegexUncached(pattern, mods string) *regexp.Regexp {
	var flags strings.Builder
	extended := false
	for _, c := range mods {
		switch c {
		case 'm', 's', 'i':
			if !strings.ContainsRune(flags.String(), c) {
				flags.WriteRune(c)
			}
		case 'x':
			extended = true
		default:
			return nil
		}
	}
	if extended {
		pattern = stripExtended(pattern)
	}
	if flags.Len() > 0 {
		pattern = "(?" + flags.String() + ")" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil
	}
	return re
}

// stripExtended removes what PCRE's x modifier ignores: white space and #
// comments (to the end of the line) outside character classes. Escaped
// characters, classes and \Q...\E quotes are kept as written.
func stripExtended(p string) string {
	var b strings.Builder
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\' && i+1 < len(p) && p[i+1] == 'Q':
			end := strings.Index(p[i+2:], `\E`)
			if end < 0 {
				b.WriteString(p[i:])
				return b.String()
			}
			b.WriteString(p[i : i+2+end+2])
			i += 2 + end + 1
		case c == '\\' && i+1 < len(p):
			b.WriteString(p[i : i+2])
			i++
		case c == '[':
			j := classEnd(p, i)
			b.WriteString(p[i:j])
			i = j - 1
		case c == '#':
			for i < len(p) && p[i] != '\n' {
				i++
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// classEnd returns the index just past the character class starting at
// p[i] == '['. A ']' first in the class (after an optional '^') is a
// literal; [:alpha:] names are skipped whole. An unterminated class runs to
// the end, where the compiler will reject it.
func classEnd(p string, i int) int {
	j := i + 1
	if j < len(p) && p[j] == '^' {
		j++
	}
	if j < len(p) && p[j] == ']' {
		j++
	}
	for j < len(p) {
		switch {
		case p[j] == '\\':
			j += 2
			continue
		case p[j] == '[' && j+1 < len(p) && p[j+1] == ':':
			if k := strings.Index(p[j+2:], ":]"); k >= 0 {
				j += 2 + k + 2
				continue
			}
		case p[j] == ']':
			return j + 1
		}
		j++
	}
	return len(p)
}
