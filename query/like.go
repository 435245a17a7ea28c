package query

// LIKE patterns, as in Cosmos DB (and SQL Server):
//
//	%       any run of characters, including none
//	_       exactly one character
//	[abc]   one character from the set; ranges like [a-f] may be mixed in
//	[^abc]  one character not in the set
//
// The ESCAPE character, if given, makes the character after it literal
// (ESCAPE '!' and 'a!%' matches the two characters "a%"); an escape
// character at the very end stands for itself. A '[' with no closing ']',
// or an empty [], is a literal '['. Matching is case-sensitive and works on
// Unicode characters, not bytes.

type likeKind uint8

const (
	likeChar  likeKind = iota // one literal character
	likeAny                   // _
	likeRun                   // %
	likeClass                 // [...] or [^...]
)

type likeItem struct {
	kind   likeKind
	char   rune
	negate bool   // likeClass: [^...]
	ranges []rune // likeClass: lo, hi pairs
}

func (it *likeItem) matches(r rune) bool {
	switch it.kind {
	case likeChar:
		return r == it.char
	case likeAny:
		return true
	case likeClass:
		in := false
		for i := 0; i+1 < len(it.ranges); i += 2 {
			if it.ranges[i] <= r && r <= it.ranges[i+1] {
				in = true
				break
			}
		}
		return in != it.negate
	}
	return false
}

// escape returns x's ESCAPE character, or -1 for none.
func (x *LikeExpr) escape() rune {
	if x.Escape != nil {
		s, _ := x.Escape.Value.(string)
		for _, r := range s {
			return r
		}
	}
	return -1
}

// compileLike splits pattern into items. escape is the ESCAPE character, or
// -1 for none.
func compileLike(pattern string, escape rune) []likeItem {
	p := []rune(pattern)
	var items []likeItem
	for i := 0; i < len(p); i++ {
		r := p[i]
		switch {
		case r == escape && escape >= 0:
			if i+1 < len(p) {
				i++
				r = p[i]
			}
			items = append(items, likeItem{kind: likeChar, char: r})
		case r == '%':
			if len(items) == 0 || items[len(items)-1].kind != likeRun {
				items = append(items, likeItem{kind: likeRun})
			}
		case r == '_':
			items = append(items, likeItem{kind: likeAny})
		case r == '[':
			if it, n := compileClass(p[i+1:]); n > 0 {
				items = append(items, it)
				i += n
				break
			}
			items = append(items, likeItem{kind: likeChar, char: r})
		default:
			items = append(items, likeItem{kind: likeChar, char: r})
		}
	}
	return items
}

// compileClass reads a character class from p, which follows a '['. It
// returns the class and the number of runes used, including the ']', or 0
// if there is no non-empty class there.
func compileClass(p []rune) (likeItem, int) {
	it := likeItem{kind: likeClass}
	i := 0
	if i < len(p) && p[i] == '^' {
		it.negate = true
		i++
	}
	start := i
	for i < len(p) && p[i] != ']' {
		lo := p[i]
		hi := lo
		if i+2 < len(p) && p[i+1] == '-' && p[i+2] != ']' {
			hi = p[i+2]
			i += 2
		}
		it.ranges = append(it.ranges, lo, hi)
		i++
	}
	if i == len(p) || i == start {
		return likeItem{}, 0
	}
	return it, i + 1
}

// matchLike reports whether s matches the LIKE pattern. It is the classic
// wildcard matcher: every item but % consumes one character, and on a
// mismatch it backtracks only to the latest %, so the time is
// O(len(s) × len(pattern)) at worst.
func matchLike(s, pattern string, escape rune) bool {
	items := compileLike(pattern, escape)
	str := []rune(s)
	si, pi := 0, 0
	star, starS := -1, 0
	for si < len(str) {
		switch {
		case pi < len(items) && items[pi].kind == likeRun:
			star, starS = pi, si
			pi++
		case pi < len(items) && items[pi].matches(str[si]):
			si++
			pi++
		case star >= 0:
			starS++
			si, pi = starS, star+1
		default:
			return false
		}
	}
	for pi < len(items) && items[pi].kind == likeRun {
		pi++
	}
	return pi == len(items)
}
