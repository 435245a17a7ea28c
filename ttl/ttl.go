// Package ttl holds Lethe's pure time-to-live rules: validation of the container
// defaultTtl and the document ttl, the effective expiry of a document, and the
// watermarks that make "expiry is final" hold whatever the container's TTL does
// next. It does no I/O and reads no clock: every function takes now as an
// argument, in Unix seconds, so the rules are tested in microseconds.
//
// The model (see ../../shared/TTL-SPEC.md): a container's TTL history is a sequence
// of epochs, one per defaultTtl value. A document is expired now iff at some
// instant t in [_ts, now] it was expired under the policy in force at t. Two
// watermarks per container summarise every closed epoch in constant space:
//
//   - DefaultCut: documents without their own ttl and with _ts <= DefaultCut were
//     doomed by an earlier default n (the epoch closed at c doomed _ts <= c - n).
//   - OwnCut: the last instant at which TTL was on in a closed epoch; documents with
//     their own ttl t and _ts + t <= OwnCut were doomed then.
//
// The live epoch adds now - n (default n > 0) and now (TTL on) respectively.
package ttl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// Max is the largest accepted TTL, in seconds (int32 max).
const Max = math.MaxInt32

// NoCut is the initial value of both watermarks: nothing was doomed.
const NoCut = math.MinInt64

// Policy is a container's defaultTtl.
//
// The zero value is TTL off (defaultTtl absent; an explicit null is refused).
type Policy struct {
	// On is true when defaultTtl is present: TTL is interpreted.
	On bool
	// Default is -1 (no default: only documents with their own ttl expire) or
	// n > 0 (documents expire n seconds after their last write). Zero when !On.
	Default int64
}

// Off is the policy of a container without defaultTtl.
var Off = Policy{}

// NoDefault is defaultTtl -1: TTL on, nothing expires unless it has its own ttl.
var NoDefault = Policy{On: true, Default: -1}

// After returns the policy defaultTtl = n (n > 0).
func After(n int64) Policy { return Policy{On: true, Default: n} }

// DefaultTTL returns the wire value of the policy: nil for off, else -1 or n.
func (p Policy) DefaultTTL() *int64 {
	if !p.On {
		return nil
	}
	v := p.Default
	return &v
}

// String renders the policy as its defaultTtl wire value.
func (p Policy) String() string {
	if !p.On {
		return "off"
	}
	return strconv.FormatInt(p.Default, 10)
}

// Own is how a document's own ttl property is interpreted while TTL is on.
type Own struct {
	// Kind says whether the document has no usable ttl, never expires, or has seconds.
	Kind OwnKind
	// Seconds is the document's ttl when Kind is OwnSeconds.
	Seconds int64
}

// OwnKind classifies a document's ttl property.
type OwnKind uint8

// The three interpretations of a document's ttl property.
const (
	// OwnNone: absent, or a value stored while TTL was off that does not conform;
	// the container default applies.
	OwnNone OwnKind = iota
	// OwnNever: ttl -1, the document never expires.
	OwnNever
	// OwnSeconds: ttl n > 0, the document expires n seconds after its last write.
	OwnSeconds
)

// Classify interprets a document's raw ttl property (nil when absent). It never
// fails: values that would be rejected while TTL is on count as absent, which is
// the rule for values stored while TTL was off.
func Classify(raw json.RawMessage) Own {
	n, ok := integer(raw)
	switch {
	case !ok:
		return Own{}
	case n == -1:
		return Own{Kind: OwnNever}
	case n > 0 && n <= Max:
		return Own{Kind: OwnSeconds, Seconds: n}
	}
	return Own{}
}

// ValidationError is a rejected defaultTtl or ttl value; its message is the one
// Cosmos DB returns and Lethe reproduces exactly.
type ValidationError struct {
	// Field is "defaultTtl" or "ttl".
	Field string
	// Value is the value as sent, rendered for the message.
	Value string
}

// Error returns Cosmos DB's message for the rejected value.
func (e *ValidationError) Error() string {
	return fmt.Sprintf("The input %s '%s' is invalid. Ensure to provide a nonzero positive integer less than or equal to '%d', or '-1' which means never expire.", e.Field, e.Value, Max)
}

// ParsePolicy validates a container's raw defaultTtl (nil when absent) and returns
// the policy. Absent means off; -1 and 1..Max are accepted; anything else,
// null included, is a *ValidationError, as in Cosmos DB: clients turn TTL off by
// leaving the property out (what the SDKs' models send for an unset value).
func ParsePolicy(raw json.RawMessage) (Policy, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return Off, nil
	}
	n, ok := integer(raw)
	if !ok || !(n == -1 || (n > 0 && n <= Max)) {
		return Off, &ValidationError{Field: "defaultTtl", Value: render(raw)}
	}
	return Policy{On: true, Default: n}, nil
}

// ValidateDocument checks a document's raw ttl property (nil when absent) as a
// write must while the container has TTL on. null is rejected, like in Cosmos DB:
// SDKs omit a null ttl to mean "inherit the default".
func ValidateDocument(raw json.RawMessage) error {
	if raw == nil {
		return nil
	}
	n, ok := integer(raw)
	if !ok || !(n == -1 || (n > 0 && n <= Max)) {
		return &ValidationError{Field: "ttl", Value: render(raw)}
	}
	return nil
}

// Watermarks summarise a container's closed TTL epochs (see the package doc).
type Watermarks struct {
	// DefaultCut dooms documents without own ttl whose _ts <= DefaultCut.
	DefaultCut int64 `json:"defaultCut"`
	// OwnCut dooms documents with own ttl t whose _ts + t <= OwnCut.
	OwnCut int64 `json:"ownCut"`
}

// Initial is the watermark pair of a new container: nothing doomed yet.
var Initial = Watermarks{DefaultCut: NoCut, OwnCut: NoCut}

// Close folds the epoch of policy old, ending at now, into the watermarks. Call it
// whenever a container's policy changes; the new policy's epoch starts at now.
func (w Watermarks) Close(old Policy, now int64) Watermarks {
	if old.On {
		w.OwnCut = max(w.OwnCut, now)
		if old.Default > 0 {
			w.DefaultCut = max(w.DefaultCut, now-old.Default)
		}
	}
	return w
}

// DefaultCutoff returns the largest _ts at which a document without its own ttl
// is expired now: such a document is expired iff _ts <= DefaultCutoff. NoCut
// means none is.
func DefaultCutoff(now int64, p Policy, w Watermarks) int64 {
	c := w.DefaultCut
	if p.On && p.Default > 0 {
		c = max(c, now-p.Default)
	}
	return c
}

// OwnCutoff returns the instant against which documents with their own ttl t are
// judged: such a document is expired iff _ts + t <= OwnCutoff.
func OwnCutoff(now int64, p Policy, w Watermarks) int64 {
	c := w.OwnCut
	if p.On {
		c = max(c, now)
	}
	return c
}

// Expired reports whether a document last written at ts (Unix seconds) with own
// ttl interpretation own is expired at now, in a container whose current policy
// is p and whose closed epochs are summarised by w. The rule is `<=`: a document
// with _ts + ttl == now is expired.
func Expired(now, ts int64, own Own, p Policy, w Watermarks) bool {
	switch own.Kind {
	case OwnNever:
		return false
	case OwnSeconds:
		return ts+own.Seconds <= OwnCutoff(now, p, w)
	default:
		return ts <= DefaultCutoff(now, p, w)
	}
}

// ExpiresAt returns the instant at which the document will expire under the
// current policy if nothing changes, and false if it never will.
func ExpiresAt(ts int64, own Own, p Policy) (int64, bool) {
	if !p.On {
		return 0, false
	}
	switch own.Kind {
	case OwnNever:
		return 0, false
	case OwnSeconds:
		return ts + own.Seconds, true
	}
	if p.Default > 0 {
		return ts + p.Default, true
	}
	return 0, false
}

// Epoch is a stretch of a container's TTL history: Policy governs from Start
// until the next epoch's Start, that instant included (a policy closing at an
// instant still governs it).
type Epoch struct {
	Start  int64
	Policy Policy
}

// ExpiryInstant returns the first instant at which a document last written
// at ts, with own ttl interpretation own, is expired in a container whose TTL
// history is epochs (in order; the last one open-ended): when its change feed
// expiry record belongs. That is ts + ttl when the policy in force then
// expires it, or the start of the epoch that expires it at once (a defaultTtl
// lowered, TTL turned on), whichever is later. false: it never expires under
// this history. Epochs that end before ts do not matter and may be left out.
func ExpiryInstant(ts int64, own Own, epochs []Epoch) (int64, bool) {
	for i, e := range epochs {
		var at int64
		switch {
		case !e.Policy.On || own.Kind == OwnNever:
			continue
		case own.Kind == OwnSeconds:
			at = ts + own.Seconds
		case e.Policy.Default > 0:
			at = ts + e.Policy.Default
		default:
			continue // no default, no own ttl: never under this policy
		}
		at = max(at, e.Start, ts)
		if i+1 < len(epochs) && at > epochs[i+1].Start {
			continue // not within this epoch
		}
		return at, true
	}
	return 0, false
}

// integer parses raw as a JSON number with an integral value that fits in int64.
func integer(raw json.RawMessage) (int64, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || !(t[0] == '-' || (t[0] >= '0' && t[0] <= '9')) {
		return 0, false
	}
	if n, err := strconv.ParseInt(string(t), 10, 64); err == nil {
		return n, true
	}
	f, err := strconv.ParseFloat(string(t), 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
		return 0, false
	}
	return int64(f), true
}

// render shows a rejected value the way it was sent; strings lose their quotes.
func render(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	var s string
	if len(t) > 0 && t[0] == '"' && json.Unmarshal(t, &s) == nil {
		return s
	}
	if len(t) > 200 {
		return string(t[:200]) + "..."
	}
	return string(t)
}
