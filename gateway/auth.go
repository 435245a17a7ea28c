package gateway

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"hash"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/lethe-db/lethe"
)

// Master-key authorization, as the Cosmos DB REST protocol defines it and as the
// Go (azcosmos) and JavaScript (@azure/cosmos) SDKs implement it:
//
//	payload = lower(verb) + "\n" + lower(resourceType) + "\n" + resourceLink + "\n" +
//	          lower(x-ms-date) + "\n" + "\n"
//	sig     = base64(HMAC-SHA256(base64decode(masterKey), payload))
//	Authorization: urlencode("type=master&ver=1.0&sig=" + sig)
//
// The Go SDK encodes the header with url.QueryEscape and the JavaScript SDK with
// encodeURIComponent; both turn '+' into "%2B", so the header is decoded with path
// unescaping, which leaves a literal '+' alone (query unescaping would turn it into
// a space and break signatures sent unencoded).

// maxClockSkew is how far the request's x-ms-date may be from the server's clock,
// in either direction, before the request is refused. Cosmos DB allows 15 minutes.
const maxClockSkew = 15 * time.Minute

// macTokenHelp is the link Cosmos DB puts in its bad-signature message.
const macTokenHelp = "https://aka.ms/cosmosdb-tsg-mac-token"

// resourceFromPath derives the resource type and resource link that a client signs
// from the escaped URL path of a request (r.URL.EscapedPath()).
//
// The path is split on "/" before percent-decoding, so an id containing "%2F" stays
// one segment; empty segments are dropped. With no segments both results are empty
// (the database account, GET /). With an odd number of segments the request is for a
// feed: the type is the last segment and the link is the segments before it
// ("dbs/d/colls/c/docs" gives "docs" and "dbs/d/colls/c"). With an even number it is
// for one resource: the type is the second-to-last segment and the link is the whole
// path ("dbs/d/colls/c/docs/x" gives "docs" and "dbs/d/colls/c/docs/x"). Offers are
// addressed by RID, and clients sign only the lower-cased offer id as the link.
//
// The link is built from decoded segments, matching the Go SDK, which signs
// url.PathUnescape of its escaped link. It returns a BadRequest error when a segment
// is not valid percent-encoding.
func resourceFromPath(escapedPath string) (resourceType, resourceLink string, err error) {
	segs, err := pathSegments(escapedPath)
	if err != nil {
		return "", "", err
	}
	resourceType, resourceLink = resourceOf(segs)
	return resourceType, resourceLink, nil
}

// pathSegments splits an escaped request path on "/", drops empty segments and
// percent-decodes each one (so an id may contain an encoded "/").
func pathSegments(escapedPath string) ([]string, error) {
	segs := make([]string, 0, strings.Count(escapedPath, "/")+1)
	for s := range strings.SplitSeq(escapedPath, "/") {
		if s == "" {
			continue
		}
		dec, err := url.PathUnescape(s)
		if err != nil {
			return nil, lethe.Errorf(lethe.CodeBadRequest, "The request path %q is not valid percent-encoding.", truncateInput(escapedPath, 200))
		}
		segs = append(segs, dec)
	}
	return segs, nil
}

// resourceOf derives the signed resource type and link from decoded segments.
func resourceOf(segs []string) (resourceType, resourceLink string) {
	switch n := len(segs); {
	case n == 0:
		return "", ""
	case n%2 == 1:
		return segs[n-1], strings.Join(segs[:n-1], "/")
	case n == 2 && segs[0] == "offers":
		return "offers", strings.ToLower(segs[1])
	default:
		return segs[n-2], strings.Join(segs, "/")
	}
}

// checkMasterKey verifies the master-key Authorization header of r against key, the
// base64-decoded account key, for the given resource type and link (see
// resourceFromPath). The signed date is the x-ms-date header, or the Date header when
// x-ms-date is absent; it must be RFC 1123 in GMT (or UTC) and within maxClockSkew of
// now.
//
// It returns nil on success and an Unauthorized *lethe.Error otherwise: for a
// missing or malformed header, an unsupported token type (AAD and resource tokens),
// a missing, malformed or skewed date, or a signature that does not match. It never
// sets a substatus: the SDKs react to some 401/403 substatus codes by refreshing
// their endpoint caches.
func checkMasterKey(r *http.Request, resourceType, resourceLink string, key []byte, now time.Time) error {
	raw := r.Header.Get("Authorization")
	if raw == "" {
		return authErrorf("Required Header authorization is missing. Ensure a valid Authorization token is defined for the request.")
	}
	tok, err := parseAuthorization(raw)
	if err != nil {
		return err
	}

	date := r.Header.Get("x-ms-date")
	if date == "" {
		date = r.Header.Get("Date")
	}
	if date == "" {
		return authErrorf("Required header 'x-ms-date' is missing. Please pass in the request date in RFC 1123 format, e.g. 'Mon, 02 Jan 2006 15:04:05 GMT'.")
	}
	t, ok := parseSignedDate(date)
	if !ok {
		return authErrorf("The input date header '%s' is invalid format. Please pass in RFC 1123 style date format, e.g. 'Mon, 02 Jan 2006 15:04:05 GMT'.", truncateInput(date, 100))
	}
	if d := now.Sub(t); d > maxClockSkew || d < -maxClockSkew {
		return authErrorf("The authorization token is not valid at the current time. Please create another token and retry (token start time: %s, token expiry time: %s, current server time: %s).",
			t.Add(-maxClockSkew).UTC().Format(http.TimeFormat),
			t.Add(maxClockSkew).UTC().Format(http.TimeFormat),
			now.UTC().Format(http.TimeFormat))
	}

	var buf [256]byte
	payload := appendStringToSign(buf[:0], r.Method, resourceType, resourceLink, date)
	if !hmac.Equal(tok.sig[:], computeMAC(payload, key)) {
		return authErrorf("The input authorization token can't serve the request. The wrong key is being used or the expected payload is not built as per the protocol. For more info: %s. Server used the following payload to sign: '%s'",
			macTokenHelp, strings.ReplaceAll(string(payload), "\n", `\n`))
	}
	return nil
}

// signMasterKey returns the Authorization header value a client sends for the given
// request: the url-encoded "type=master&ver=1.0&sig=..." string, encoded with
// url.QueryEscape exactly as the Go SDK does. key is the base64-decoded account key.
// The tests use it, and so can tools that talk to Lethe without an SDK.
func signMasterKey(verb, resourceType, resourceLink, date string, key []byte) string {
	sig := base64.StdEncoding.EncodeToString(computeMAC(stringToSign(verb, resourceType, resourceLink, date), key))
	return url.QueryEscape("type=master&ver=1.0&sig=" + sig)
}

// stringToSign builds the payload that master-key signatures cover. Only the verb,
// the resource type and the date are lower-cased; the link keeps its case.
func stringToSign(verb, resourceType, resourceLink, date string) []byte {
	return appendStringToSign(nil, verb, resourceType, resourceLink, date)
}

// appendStringToSign appends stringToSign's payload to dst: a request's check
// builds it in one buffer, where concatenating strings cost three allocations.
func appendStringToSign(dst []byte, verb, resourceType, resourceLink, date string) []byte {
	dst = appendLower(dst, verb)
	dst = append(dst, '\n')
	dst = appendLower(dst, resourceType)
	dst = append(dst, '\n')
	dst = append(dst, resourceLink...)
	dst = append(dst, '\n')
	dst = appendLower(dst, date)
	return append(dst, '\n', '\n')
}

// appendLower appends s lower-cased as strings.ToLower does: byte by byte
// when it is ASCII, as SDKs' verbs, types and dates are.
func appendLower(dst []byte, s string) []byte {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return append(dst, strings.ToLower(s)...)
		}
	}
	for i := range len(s) {
		dst = append(dst, lowerASCII(s[i]))
	}
	return dst
}

// lowerASCII lower-cases an ASCII letter and leaves any other byte alone.
func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// computeMAC returns HMAC-SHA256(key, payload). Keyed HMAC states are reused:
// keying one costs two SHA-256 blocks and several allocations, on every
// request otherwise.
func computeMAC(payload []byte, key []byte) []byte {
	p := macPoolFor(key)
	h := p.pool.Get().(hash.Hash)
	h.Write(payload)
	sum := h.Sum(nil)
	h.Reset() // back to the keyed initial state
	p.pool.Put(h)
	return sum
}

// macPool holds reusable HMAC-SHA256 states keyed with key.
type macPool struct {
	key  string
	pool sync.Pool
}

// lastMACPool is the pool of the key used last: a server checks every
// request against its one account key.
var lastMACPool atomic.Pointer[macPool]

// macPoolFor returns a pool of HMAC states keyed with key.
func macPoolFor(key []byte) *macPool {
	if p := lastMACPool.Load(); p != nil && p.key == string(key) {
		return p
	}
	p := &macPool{key: string(key)}
	k := []byte(p.key)
	p.pool.New = func() any { return hmac.New(sha256.New, k) }
	lastMACPool.Store(p)
	return p
}

// authToken is a parsed master-key Authorization header.
type authToken struct {
	sig [sha256.Size]byte // the decoded signature
}

// maxAuthHeader is the longest Authorization header parsed without
// allocating: a master-key token is about 90 bytes, url-encoded.
const maxAuthHeader = 256

// parseAuthorization parses an Authorization header value, url-encoded or not, of
// the form "type=master&ver=1.0&sig=<base64>". Key names are matched without regard
// to case and in any order. It returns an Unauthorized *lethe.Error for anything
// else, including AAD ("type=aad") and resource ("type=resource") tokens, which
// Lethe does not support. Every request is parsed, so the header is decoded into
// a buffer on the stack rather than with url.PathUnescape and strings.
func parseAuthorization(raw string) (authToken, error) {
	var buf [maxAuthHeader]byte
	s := buf[:0]
	if len(raw) > len(buf) {
		s = make([]byte, 0, len(raw))
	}
	s, ok := appendPathUnescaped(s, raw)
	if !ok {
		return authToken{}, malformedAuthError()
	}
	var typ, ver, sig []byte
	var haveSig bool
	for more := true; more; {
		part := s
		if i := bytes.IndexByte(s, '&'); i >= 0 {
			part, s = s[:i], s[i+1:]
		} else {
			more = false // the last part, empty when s ends in '&'
		}
		k, v, ok := bytes.Cut(part, []byte("="))
		if !ok {
			return authToken{}, malformedAuthError()
		}
		switch k = bytes.TrimSpace(k); {
		case lowerIs(k, "type"):
			typ = bytes.TrimSpace(v)
		case lowerIs(k, "ver"):
			ver = bytes.TrimSpace(v)
		case lowerIs(k, "sig"):
			sig, haveSig = bytes.TrimSpace(v), true
		}
	}
	switch {
	case lowerIs(typ, "master"):
	case lowerIs(typ, "aad"):
		return authToken{}, authErrorf("Microsoft Entra ID (AAD) tokens are not supported by Lethe. Authenticate with the account key.")
	case lowerIs(typ, "resource"), lowerIs(typ, "sas"):
		return authToken{}, authErrorf("Resource tokens are not supported by Lethe. Authenticate with the account key.")
	default:
		return authToken{}, malformedAuthError()
	}
	if string(ver) != "1.0" || !haveSig {
		return authToken{}, malformedAuthError()
	}
	var stack [sha256.Size + 2]byte
	dec := stack[:]
	if base64.StdEncoding.DecodedLen(len(sig)) > len(dec) {
		dec = make([]byte, base64.StdEncoding.DecodedLen(len(sig))) // newlines, which base64 skips
	}
	var tok authToken
	if n, err := base64.StdEncoding.Decode(dec, sig); err != nil || n != sha256.Size {
		return authToken{}, malformedAuthError()
	}
	copy(tok.sig[:], dec)
	return tok, nil
}

// lowerIs reports whether strings.ToLower(string(b)) == lower, for a lower
// made of ASCII letters, without converting b.
func lowerIs(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range len(b) {
		if lowerASCII(b[i]) != lower[i] {
			return false
		}
	}
	return true
}

// appendPathUnescaped appends s to dst with its percent-escapes decoded as
// url.PathUnescape decodes them ('+' stays '+'); false if an escape is
// malformed.
func appendPathUnescaped(dst []byte, s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			dst = append(dst, c)
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return dst, false
		}
		dst = append(dst, unhex(s[i+1])<<4|unhex(s[i+2]))
		i += 2
	}
	return dst, true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}

// parseRequestDate parses an x-ms-date or Date header: RFC 1123 with the zone
// written "GMT" (what both SDKs send) or "UTC". Other zones are refused, because
// time.Parse silently treats unknown abbreviations as UTC offset zero.
func parseRequestDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if !strings.HasSuffix(s, " GMT") && !strings.HasSuffix(s, " UTC") {
		return time.Time{}, false
	}
	// Parsed without its zone, in UTC: time.Parse would give "GMT" a zone of
	// its own, allocated on every request.
	t, err := time.ParseInLocation(rfc1123NoZone, strings.TrimRight(s[:len(s)-3], " "), time.UTC)
	if err != nil {
		return time.Time{}, false
	}
	return t, true
}

// requestDate is a request date header and its parse.
type requestDate struct {
	header string
	t      time.Time
}

// lastRequestDate is the last request date parsed: clients sign with the
// current second, so most requests repeat the one before.
var lastRequestDate atomic.Pointer[requestDate]

// parseSignedDate is parseRequestDate for the signed date of every request,
// remembering the last date parsed.
func parseSignedDate(s string) (time.Time, bool) {
	if d := lastRequestDate.Load(); d != nil && d.header == s {
		return d.t, true
	}
	t, ok := parseRequestDate(s)
	if ok {
		lastRequestDate.Store(&requestDate{header: s, t: t})
	}
	return t, ok
}

// rfc1123NoZone is time.RFC1123 without its zone abbreviation.
const rfc1123NoZone = "Mon, 02 Jan 2006 15:04:05"

// malformedAuthError is the error for an Authorization header that cannot be
// parsed. It does not echo the header, which carries a credential.
func malformedAuthError() *lethe.Error {
	return authErrorf("The input authorization token can't serve the request. The Authorization header is not of the form 'type=master&ver=1.0&sig=<base64 signature>', url-encoded. For more info: %s.",
		macTokenHelp)
}

// authErrorf returns an Unauthorized (401) domain error without a substatus.
func authErrorf(format string, args ...any) *lethe.Error {
	return lethe.Errorf(lethe.CodeUnauthorized, format, args...)
}

// truncateInput shortens s to at most n bytes, cut at a rune boundary and marked
// with "...", for quoting client input in error messages.
func truncateInput(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}
