package query

import "strconv"

// Token is a lexical token of the Cosmos DB SQL dialect. The set mirrors
// go/token: special tokens, literals, operators, then keywords.
type Token int

// The tokens. Keywords are matched case-insensitively; every other token is
// spelled exactly as in its comment.
const (
	ILLEGAL Token = iota // a character the scanner could not read
	EOF                  // end of input

	literalBeg
	IDENT  // c, name, _x1
	NUMBER // 12, 1.5, 2e-3, 0x1F
	STRING // 'abc' or "abc"
	PARAM  // @name
	literalEnd

	operatorBeg
	ADD    // +
	SUB    // -
	MUL    // *
	QUO    // /
	REM    // %
	CONCAT // ||
	BITAND // &
	BITOR  // |
	BITXOR // ^
	BITNOT // ~
	SHL    // <<
	SHR    // >>
	USHR   // >>> (zero-fill right shift)

	EQL // =
	NEQ // != or <>
	LSS // <
	LEQ // <=
	GTR // >
	GEQ // >=

	QUEST    // ?
	COALESCE // ??
	COLON    // :
	PERIOD   // .
	COMMA    // ,
	LPAREN   // (
	RPAREN   // )
	LBRACK   // [
	RBRACK   // ]
	LBRACE   // {
	RBRACE   // }
	operatorEnd

	keywordBeg
	AND
	OR
	NOT
	IN
	BETWEEN
	LIKE
	ESCAPE
	TRUE
	FALSE
	NULL
	UNDEFINED
	SELECT
	FROM
	WHERE
	AS
	JOIN
	VALUE
	TOP
	DISTINCT
	ORDER
	BY
	ASC
	DESC
	GROUP
	OFFSET
	LIMIT
	EXISTS
	ARRAY
	keywordEnd
)

var tokens = [...]string{
	ILLEGAL: "ILLEGAL",
	EOF:     "EOF",
	IDENT:   "IDENT",
	NUMBER:  "NUMBER",
	STRING:  "STRING",
	PARAM:   "PARAM",

	ADD:    "+",
	SUB:    "-",
	MUL:    "*",
	QUO:    "/",
	REM:    "%",
	CONCAT: "||",
	BITAND: "&",
	BITOR:  "|",
	BITXOR: "^",
	BITNOT: "~",
	SHL:    "<<",
	SHR:    ">>",
	USHR:   ">>>",

	EQL: "=",
	NEQ: "!=",
	LSS: "<",
	LEQ: "<=",
	GTR: ">",
	GEQ: ">=",

	QUEST:    "?",
	COALESCE: "??",
	COLON:    ":",
	PERIOD:   ".",
	COMMA:    ",",
	LPAREN:   "(",
	RPAREN:   ")",
	LBRACK:   "[",
	RBRACK:   "]",
	LBRACE:   "{",
	RBRACE:   "}",

	AND:       "AND",
	OR:        "OR",
	NOT:       "NOT",
	IN:        "IN",
	BETWEEN:   "BETWEEN",
	LIKE:      "LIKE",
	ESCAPE:    "ESCAPE",
	TRUE:      "true",
	FALSE:     "false",
	NULL:      "null",
	UNDEFINED: "undefined",
	SELECT:    "SELECT",
	FROM:      "FROM",
	WHERE:     "WHERE",
	AS:        "AS",
	JOIN:      "JOIN",
	VALUE:     "VALUE",
	TOP:       "TOP",
	DISTINCT:  "DISTINCT",
	ORDER:     "ORDER",
	BY:        "BY",
	ASC:       "ASC",
	DESC:      "DESC",
	GROUP:     "GROUP",
	OFFSET:    "OFFSET",
	LIMIT:     "LIMIT",
	EXISTS:    "EXISTS",
	ARRAY:     "ARRAY",
}

// String returns the token's spelling for operators and keywords, and its
// class name (IDENT, NUMBER, ...) for the others.
func (t Token) String() string {
	if t >= 0 && int(t) < len(tokens) && tokens[t] != "" {
		return tokens[t]
	}
	return "token(" + strconv.Itoa(int(t)) + ")"
}

// IsLiteral reports whether t is an identifier, number, string or parameter.
func (t Token) IsLiteral() bool { return literalBeg < t && t < literalEnd }

// IsOperator reports whether t is an operator or delimiter.
func (t Token) IsOperator() bool { return operatorBeg < t && t < operatorEnd }

// IsKeyword reports whether t is a keyword.
func (t Token) IsKeyword() bool { return keywordBeg < t && t < keywordEnd }

// Binary operator precedences, loosest first. They follow the Cosmos DB SQL
// grammar (the .NET SDK's sql.g4), where string concatenation binds loosest and
// the bitwise operators sit below equality, as in C. The shift operators are
// not in that grammar; they take their C/JavaScript place between the additive
// and the relational operators.
const (
	precLowest     = 0
	precConcat     = iota // ||
	precBitOr             // |
	precBitXor            // ^
	precBitAnd            // &
	precEquality          // = != <>
	precRelational        // < <= > >=
	precShift             // << >> >>>
	precAdditive          // + -
	precMultiply          // * / %
)

// Precedence returns the binding strength of t as a binary arithmetic,
// bitwise, comparison or concatenation operator, or 0 if t is not one. The
// logical operators (AND, OR), IN, LIKE, BETWEEN, ?? and ?: are handled by
// their own grammar rules, below all of these.
func (t Token) Precedence() int {
	switch t {
	case CONCAT:
		return precConcat
	case BITOR:
		return precBitOr
	case BITXOR:
		return precBitXor
	case BITAND:
		return precBitAnd
	case EQL, NEQ:
		return precEquality
	case LSS, LEQ, GTR, GEQ:
		return precRelational
	case SHL, SHR, USHR:
		return precShift
	case ADD, SUB:
		return precAdditive
	case MUL, QUO, REM:
		return precMultiply
	}
	return precLowest
}

var keywords map[string]Token

func init() {
	keywords = make(map[string]Token, keywordEnd-keywordBeg)
	for t := keywordBeg + 1; t < keywordEnd; t++ {
		keywords[asciiUpper(tokens[t])] = t
	}
}

// Lookup maps an identifier to its keyword token, or IDENT if it is not a
// keyword. Keywords are case-insensitive (true, TRUE and True are all TRUE);
// only ASCII letters fold, so no Unicode identifier can turn into a keyword.
func Lookup(ident string) Token {
	if len(ident) < 2 || len(ident) > len("UNDEFINED") {
		return IDENT
	}
	if t, ok := keywords[asciiUpper(ident)]; ok {
		return t
	}
	return IDENT
}

// asciiUpper upper-cases the ASCII letters of s and leaves every other byte.
func asciiUpper(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c >= 'a' && c <= 'z' {
			b := []byte(s)
			for j := i; j < len(b); j++ {
				if b[j] >= 'a' && b[j] <= 'z' {
					b[j] -= 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return s
}
