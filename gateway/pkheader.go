package gateway

import (
	"encoding/json"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lethe-db/lethe"
)

// The x-ms-documentdb-partitionkey header carries a partition key value as a JSON
// array with one component per partition key path:
//
//	["p1"]  [5]  [true]  [null]  ["a","b"]  [{}]  []
//
// where {} stands for Undefined (the document has no value at the path) and []
// for the empty key.
//
// The Go SDK (azcosmos v1.5.0, PartitionKey.toJsonString) writes string
// components with strconv.QuoteToASCII and everything else with json.Marshal. Go
// quoting can produce escapes that JSON does not have: \a, \v, \xNN and
// \UXXXXXXXX (every rune outside the BMP, e.g. "😀" becomes "\U0001f600"). The
// escapes the two syntaxes share (\b \f \n \r \t \\ \" \uXXXX) mean the same in
// both, so a header that is valid JSON is read as JSON, and only a header that is
// not falls back to a tokenizer that unquotes strings with Go syntax. It never
// sends the header for an empty key (NewPartitionKey()).

// pkHeaderMismatch is Cosmos DB's message for a partition key header that is well
// formed but not a partition key value (not an array, or a component that is not a
// string, number, bool, null or {}).
const pkHeaderMismatch = "Partition key provided either doesn't correspond to definition in the collection or doesn't match partition key field values specified in the document."

// parsePartitionKeyHeader parses the value of the x-ms-documentdb-partitionkey
// header. Numbers become float64, null becomes nil and {} becomes lethe.Undefined{}.
// Strings are valid UTF-8: invalid bytes, which only Go's \x escapes can produce,
// become U+FFFD one by one, as encoding/json does when it writes a document.
//
// It returns a BadRequest *lethe.Error when the value does not parse, or parses but
// is not an array of such components.
func parsePartitionKeyHeader(s string) (lethe.PartitionKey, error) {
	if v, ok := singleSimpleString(s); ok {
		return lethe.PartitionKey{v}, nil
	}
	return parsePartitionKeyJSON(s)
}

// singleSimpleString reads the header every request of a container with one
// partition key path sends, ["value"], without a JSON decoder, when the value
// holds nothing that needs one: no quote, backslash or control character, and
// valid UTF-8. Whatever it accepts, parsePartitionKeyJSON reads the same.
func singleSimpleString(s string) (string, bool) {
	if len(s) < 4 || s[:2] != `["` || s[len(s)-2:] != `"]` {
		return "", false
	}
	v := s[2 : len(s)-2]
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 || c == '"' || c == '\\' {
			return "", false
		}
	}
	if !utf8.ValidString(v) {
		return "", false
	}
	return v, true
}

// parsePartitionKeyJSON is parsePartitionKeyHeader for any header: JSON, or
// the Go SDK's quoting.
func parsePartitionKeyJSON(s string) (lethe.PartitionKey, error) {
	var raws []json.RawMessage
	// A JSON null would unmarshal into a nil slice without error: insist on "[".
	isArray := strings.HasPrefix(strings.TrimLeft(s, " \t\r\n"), "[")
	if err := json.Unmarshal([]byte(s), &raws); err == nil && isArray {
		pk := make(lethe.PartitionKey, 0, len(raws))
		for _, raw := range raws {
			c, err := pkComponentFromJSON(raw)
			if err != nil {
				return nil, err
			}
			pk = append(pk, c)
		}
		return pk, nil
	}
	if json.Valid([]byte(s)) {
		// Well formed, but not an array: "p1", 5, {"a":1}, null.
		return nil, lethe.Errorf(lethe.CodeBadRequest, "%s", pkHeaderMismatch)
	}
	return parseGoQuotedPartitionKey(s)
}

// pkComponentFromJSON decodes one component of a partition key array written as
// JSON.
func pkComponentFromJSON(raw []byte) (any, error) {
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		// Only numbers out of float64 range get here: the array parsed.
		return nil, lethe.Errorf(lethe.CodeBadRequest, "%s", pkHeaderMismatch)
	}
	switch v := v.(type) {
	case string, float64, bool, nil:
		return v, nil
	case map[string]any:
		if len(v) == 0 {
			return lethe.Undefined{}, nil
		}
	}
	return nil, lethe.Errorf(lethe.CodeBadRequest, "%s", pkHeaderMismatch)
}

// parseGoQuotedPartitionKey parses a partition key header that is not valid JSON
// but may be what the Go SDK writes: a JSON array whose string components are Go
// string literals. Other components must be JSON scalars or {}.
func parseGoQuotedPartitionKey(s string) (lethe.PartitionKey, error) {
	parts, ok := splitPartitionKeyArray(s)
	if !ok {
		return nil, invalidPKHeader(s)
	}
	pk := make(lethe.PartitionKey, 0, len(parts))
	for _, p := range parts {
		if strings.HasPrefix(p, `"`) {
			u, err := strconv.Unquote(p)
			if err != nil {
				return nil, invalidPKHeader(s)
			}
			pk = append(pk, validUTF8PerByte(u))
			continue
		}
		if !json.Valid([]byte(p)) {
			return nil, invalidPKHeader(s)
		}
		c, err := pkComponentFromJSON([]byte(p))
		if err != nil {
			return nil, err
		}
		pk = append(pk, c)
	}
	return pk, nil
}

// splitPartitionKeyArray splits "[a, b, ...]" into its trimmed component texts,
// skipping over double-quoted strings with backslash escapes so that commas and
// brackets inside them do not split. "[]" gives no components. It reports false for
// text that is not bracketed or has an unterminated string; it does not check the
// components themselves.
func splitPartitionKeyArray(s string) ([]string, bool) {
	s = strings.TrimSpace(s)
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return nil, false
	}
	body := s[1 : len(s)-1]
	if strings.TrimSpace(body) == "" {
		return nil, true
	}
	var parts []string
	start := 0
	for i := 0; i < len(body); i++ {
		switch body[i] {
		case '"':
			for i++; i < len(body) && body[i] != '"'; i++ {
				if body[i] == '\\' {
					i++
				}
			}
			if i >= len(body) {
				return nil, false
			}
		case ',':
			parts = append(parts, strings.TrimSpace(body[start:i]))
			start = i + 1
		}
	}
	return append(parts, strings.TrimSpace(body[start:])), true
}

// validUTF8PerByte returns s with each byte that is not part of a valid UTF-8
// sequence replaced by U+FFFD, the way encoding/json encodes such strings.
func validUTF8PerByte(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// invalidPKHeader is the error for a partition key header that does not parse.
func invalidPKHeader(s string) *lethe.Error {
	return lethe.Errorf(lethe.CodeBadRequest, "The partition key header value '%s' is invalid.", truncateInput(s, 100))
}
