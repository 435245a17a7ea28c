package ttl

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"
)

func raw(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

func TestParsePolicy(t *testing.T) {
	valid := []struct {
		in   string
		want Policy
	}{
		{"", Off},
		{" ", Off},
		{"-1", NoDefault},
		{"1", After(1)},
		{"60", After(60)},
		{"2147483647", After(Max)},
		{"3600.0", After(3600)},
		{"1e2", After(100)},
	}
	for _, c := range valid {
		got, err := ParsePolicy(raw(c.in))
		if err != nil || got != c.want {
			t.Errorf("ParsePolicy(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	invalid := map[string]string{
		"null":       "null", // as Cosmos DB: TTL is turned off by leaving the property out
		" null ":     "null",
		"0":          "0",
		"-2":         "-2",
		"-100":       "-100",
		"1.5":        "1.5",
		"2147483648": "2147483648",
		`"60"`:       "60",
		"true":       "true",
		"[]":         "[]",
		"{}":         "{}",
		"1e300":      "1e300",
	}
	for in, shown := range invalid {
		_, err := ParsePolicy(raw(in))
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("ParsePolicy(%q) err = %v; want ValidationError", in, err)
			continue
		}
		want := "The input defaultTtl '" + shown + "' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."
		if err.Error() != want {
			t.Errorf("ParsePolicy(%q) message\n got %s\nwant %s", in, err, want)
		}
	}
}

func TestValidateDocument(t *testing.T) {
	for _, ok := range []string{"", "-1", "1", "10", "2147483647"} {
		if err := ValidateDocument(raw(ok)); err != nil {
			t.Errorf("ValidateDocument(%q) = %v; want nil", ok, err)
		}
	}
	for _, bad := range []string{"null", "0", "-2", "-1.5", "0.5", "2147483648", `"10"`, "false", "{}", "[1]"} {
		err := ValidateDocument(raw(bad))
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Field != "ttl" {
			t.Errorf("ValidateDocument(%q) = %v; want ttl ValidationError", bad, err)
		}
	}
	want := "The input ttl '0' is invalid. Ensure to provide a nonzero positive integer less than or equal to '2147483647', or '-1' which means never expire."
	if err := ValidateDocument(raw("0")); err.Error() != want {
		t.Errorf("message = %q", err)
	}
}

func TestClassify(t *testing.T) {
	cases := map[string]Own{
		"":           {},
		"null":       {},
		"0":          {},
		"-2":         {},
		"1.5":        {},
		`"5"`:        {},
		"2147483648": {},
		"-1":         {Kind: OwnNever},
		"5":          {Kind: OwnSeconds, Seconds: 5},
		"5.0":        {Kind: OwnSeconds, Seconds: 5},
		"2147483647": {Kind: OwnSeconds, Seconds: Max},
	}
	for in, want := range cases {
		if got := Classify(raw(in)); got != want {
			t.Errorf("Classify(%q) = %+v; want %+v", in, got, want)
		}
	}
}

// TestMatrix covers every cell of TTL-SPEC.md's matrix at the boundary: one second
// before expiry (live), at exactly _ts + ttl (expired: the rule is <=), and after.
func TestMatrix(t *testing.T) {
	const ts = 1_000_000
	const docTTL, defTTL = 10, 30
	own := map[string]Own{
		"absent": {},
		"-1":     {Kind: OwnNever},
		"n":      {Kind: OwnSeconds, Seconds: docTTL},
	}
	policy := map[string]Policy{
		"absent": Off,
		"-1":     NoDefault,
		"n'":     After(defTTL),
	}
	// expiresAfter is the matrix: seconds after _ts at which the document expires, 0 = never.
	matrix := map[[2]string]int64{
		{"absent", "absent"}: 0,
		{"absent", "-1"}:     0,
		{"absent", "n'"}:     defTTL,
		{"-1", "absent"}:     0,
		{"-1", "-1"}:         0,
		{"-1", "n'"}:         0,
		{"n", "absent"}:      0,
		{"n", "-1"}:          docTTL,
		{"n", "n'"}:          docTTL,
	}
	if len(matrix) != 9 {
		t.Fatal("matrix must have nine cells")
	}
	for cell, after := range matrix {
		o, p := own[cell[0]], policy[cell[1]]
		name := "doc " + cell[0] + " / container " + cell[1]
		if after == 0 {
			for _, now := range []int64{ts, ts + defTTL, ts + Max, ts + 10*Max} {
				if Expired(now, ts, o, p, Initial) {
					t.Errorf("%s: expired at now=_ts+%d; want never", name, now-ts)
				}
			}
			if at, ok := ExpiresAt(ts, o, p); ok {
				t.Errorf("%s: ExpiresAt = %d; want never", name, at)
			}
			continue
		}
		if Expired(ts+after-1, ts, o, p, Initial) {
			t.Errorf("%s: expired one second early", name)
		}
		if !Expired(ts+after, ts, o, p, Initial) {
			t.Errorf("%s: live at exactly _ts+ttl; the rule is <=", name)
		}
		if !Expired(ts+after+1, ts, o, p, Initial) {
			t.Errorf("%s: live after expiry", name)
		}
		if at, ok := ExpiresAt(ts, o, p); !ok || at != ts+after {
			t.Errorf("%s: ExpiresAt = %d, %v; want %d", name, at, ok, ts+after)
		}
	}
}

func TestMaxTTLNoOverflow(t *testing.T) {
	const ts = 1_700_000_000
	o := Own{Kind: OwnSeconds, Seconds: Max}
	if Expired(ts+Max-1, ts, o, NoDefault, Initial) || !Expired(ts+Max, ts, o, NoDefault, Initial) {
		t.Error("ttl 2147483647 boundary wrong")
	}
	if Expired(ts+Max-1, ts, Own{}, After(Max), Initial) || !Expired(ts+Max, ts, Own{}, After(Max), Initial) {
		t.Error("defaultTtl 2147483647 boundary wrong")
	}
}

// TestPolicyChangeAppliesAtOnce: a document written 100 s ago in a container whose
// default changes from 3600 to 60 is expired right away (TTL-SPEC.md).
func TestPolicyChangeAppliesAtOnce(t *testing.T) {
	const ts, now = 5000, 5100
	w := Initial
	if Expired(now, ts, Own{}, After(3600), w) {
		t.Fatal("expired under 3600")
	}
	w = w.Close(After(3600), now)
	if !Expired(now, ts, Own{}, After(60), w) {
		t.Error("not expired at once after shortening the default to 60")
	}
	// Turning TTL on over old documents expires them at once too.
	w2 := Initial.Close(Off, now)
	if !Expired(now, ts, Own{}, After(100), w2) {
		t.Error("turning on default 100 did not expire a 100 s old document")
	}
	if !Expired(now, ts, Own{Kind: OwnSeconds, Seconds: 50}, NoDefault, w2) {
		t.Error("turning TTL on did not expire a document whose own ttl had passed")
	}
	// Lengthening before expiry keeps the document alive.
	w3 := Initial.Close(After(200), now)
	if Expired(now, ts, Own{}, After(3600), w3) {
		t.Error("lengthening the default before expiry expired the document")
	}
}

// TestExpiryIsFinal: once expired, a document stays expired whatever the policy
// does next (lengthened, set to -1, turned off), and whatever the purge did.
func TestExpiryIsFinal(t *testing.T) {
	const ts = 1000
	type step struct {
		at     int64
		policy Policy
	}
	cases := []struct {
		name  string
		own   Own
		steps []step // the first step is the policy at creation
		check int64
	}{
		{"default lengthened", Own{}, []step{{ts, After(10)}, {ts + 20, After(3600)}}, ts + 21},
		{"default to -1", Own{}, []step{{ts, After(10)}, {ts + 10, NoDefault}}, ts + 500},
		{"default off", Own{}, []step{{ts, After(10)}, {ts + 11, Off}}, ts + 500},
		{"off then on again long", Own{}, []step{{ts, After(10)}, {ts + 11, Off}, {ts + 12, After(1 << 30)}}, ts + 13},
		{"own ttl then off", Own{Kind: OwnSeconds, Seconds: 5}, []step{{ts, NoDefault}, {ts + 5, Off}}, ts + 100},
		{"own ttl then off then on", Own{Kind: OwnSeconds, Seconds: 5}, []step{{ts, After(100)}, {ts + 6, Off}, {ts + 7, NoDefault}}, ts + 8},
		{"expired at the closing instant", Own{}, []step{{ts, After(10)}, {ts + 10, After(20)}}, ts + 11},
	}
	for _, c := range cases {
		w := Initial
		cur := c.steps[0].policy
		for _, s := range c.steps[1:] {
			w = w.Close(cur, s.at)
			cur = s.policy
		}
		if !Expired(c.check, ts, c.own, cur, w) {
			t.Errorf("%s: document came back", c.name)
		}
	}
	// The counterpart: a document never expired under any epoch stays live.
	w := Initial.Close(After(10), ts+5) // closed before the document's ts+10
	if Expired(ts+6, ts, Own{}, Off, w) {
		t.Error("a document that never expired is reported expired after TTL was turned off")
	}
	w = Initial.Close(NoDefault, ts+4)
	if Expired(ts+100, ts, Own{Kind: OwnSeconds, Seconds: 5}, Off, w) {
		t.Error("own-ttl document expired though TTL was turned off before its ttl passed")
	}
}

// TestWatermarksMatchHistory checks the constant-space watermarks against the
// definition: a document is expired iff at some second t in [ts, now] it was
// expired under the policy in force at t (the policy closing at an instant still
// governs that instant). Random histories, brute force.
func TestWatermarksMatchHistory(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	policies := []Policy{Off, NoDefault, After(1), After(3), After(7), After(20)}
	owns := []Own{{}, {Kind: OwnNever}, {Kind: OwnSeconds, Seconds: 1}, {Kind: OwnSeconds, Seconds: 4}, {Kind: OwnSeconds, Seconds: 15}}
	for iter := 0; iter < 3000; iter++ {
		type epoch struct {
			start  int64
			policy Policy
		}
		hist := []epoch{{0, policies[rng.IntN(len(policies))]}}
		at := int64(0)
		for range rng.IntN(5) {
			at += int64(rng.IntN(8))
			hist = append(hist, epoch{at, policies[rng.IntN(len(policies))]})
		}
		end := at + int64(rng.IntN(25))
		ts := int64(rng.IntN(int(end) + 1))
		own := owns[rng.IntN(len(owns))]

		policyAt := func(t int64) []Policy { // every policy governing instant t
			var ps []Policy
			for i, e := range hist {
				next := int64(1 << 62)
				if i+1 < len(hist) {
					next = hist[i+1].start
				}
				if e.start <= t && t <= next {
					ps = append(ps, e.policy)
				}
			}
			return ps
		}
		// Replay with watermarks, checking at every instant from ts to end.
		for now := ts; now <= end; now++ {
			w := Initial
			cur := hist[0].policy
			for _, e := range hist[1:] {
				if e.start > now {
					break
				}
				w = w.Close(cur, e.start)
				cur = e.policy
			}
			want := false
			for t0 := ts; t0 <= now && !want; t0++ {
				for _, p := range policyAt(t0) {
					if Expired(t0, ts, own, p, Initial) {
						want = true
					}
				}
			}
			if got := Expired(now, ts, own, cur, w); got != want {
				t.Fatalf("history %+v ts=%d own=%+v now=%d: Expired=%v, brute force=%v", hist, ts, own, now, got, want)
			}
		}
	}
}

func TestCutoffsAgreeWithExpired(t *testing.T) {
	w := Watermarks{DefaultCut: 50, OwnCut: 70}
	for _, p := range []Policy{Off, NoDefault, After(5)} {
		for ts := int64(0); ts < 120; ts++ {
			now := int64(100)
			if got, want := Expired(now, ts, Own{}, p, w), ts <= DefaultCutoff(now, p, w); got != want {
				t.Fatalf("default cutoff disagrees at ts=%d policy=%v", ts, p)
			}
			o := Own{Kind: OwnSeconds, Seconds: 3}
			if got, want := Expired(now, ts, o, p, w), ts+3 <= OwnCutoff(now, p, w); got != want {
				t.Fatalf("own cutoff disagrees at ts=%d policy=%v", ts, p)
			}
		}
	}
}

func FuzzValidate(f *testing.F) {
	for _, s := range []string{"0", "-1", "1", "1.5", "null", `"x"`, "2147483647", "1e400", "-0", "00", "- 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		errDoc := ValidateDocument(json.RawMessage(s))
		p, errPol := ParsePolicy(json.RawMessage(s))
		own := Classify(json.RawMessage(s))
		if errDoc == nil && s != "" && own.Kind == OwnNone {
			t.Fatalf("%q accepted as a document ttl but classified as absent", s)
		}
		if errPol == nil && p.On && !(p.Default == -1 || (p.Default > 0 && p.Default <= Max)) {
			t.Fatalf("%q accepted as defaultTtl %d", s, p.Default)
		}
	})
}

// TestExpiryInstantMatchesHistory checks ExpiryInstant against the
// definition, by brute force over random histories: the first instant from
// the document's write on at which the watermark model says it is expired.
func TestExpiryInstantMatchesHistory(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	policies := []Policy{Off, NoDefault, After(1), After(3), After(7), After(20)}
	owns := []Own{{}, {Kind: OwnNever}, {Kind: OwnSeconds, Seconds: 1}, {Kind: OwnSeconds, Seconds: 4}, {Kind: OwnSeconds, Seconds: 15}}
	const horizon = 200 // past every epoch start: the last policy then holds for ever
	for iter := 0; iter < 5000; iter++ {
		hist := []Epoch{{0, policies[rng.IntN(len(policies))]}}
		at := int64(0)
		for range rng.IntN(5) {
			at += int64(rng.IntN(8))
			hist = append(hist, Epoch{at, policies[rng.IntN(len(policies))]})
		}
		ts := int64(rng.IntN(int(at) + 10))
		own := owns[rng.IntN(len(owns))]
		brute, found := int64(0), false
		for now := ts; now <= horizon && !found; now++ {
			w, cur := Initial, hist[0].Policy
			for _, e := range hist[1:] {
				if e.Start > now {
					break
				}
				w, cur = w.Close(cur, e.Start), e.Policy
			}
			if Expired(now, ts, own, cur, w) {
				brute, found = now, true
			}
		}
		got, ok := ExpiryInstant(ts, own, hist)
		if ok != found || got != brute {
			t.Fatalf("history %+v ts=%d own=%+v: ExpiryInstant = %d, %v; brute force %d, %v", hist, ts, own, got, ok, brute, found)
		}
	}
	// A defaultTtl lowered at 100 expires a document written at 10 (ttl 60
	// before, 30 after) at 100, the instant of the change; one written at 90
	// at 120.
	hist := []Epoch{{0, After(200)}, {100, After(30)}}
	if at, _ := ExpiryInstant(10, Own{}, hist); at != 100 {
		t.Errorf("expired by the change: at %d, want 100", at)
	}
	if at, _ := ExpiryInstant(90, Own{}, hist); at != 120 {
		t.Errorf("expired under the new default: at %d, want 120", at)
	}
}

// A history that forgot its old epochs places every expiry at or after the
// instant it forgot from exactly where the whole history does, and places
// none of the older ones after it.
func TestHistoryForgetKeepsExpiriesInWindow(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	policies := []Policy{Off, NoDefault, After(1), After(3), After(7), After(20)}
	owns := []Own{{}, {Kind: OwnNever}, {Kind: OwnSeconds, Seconds: 1}, {Kind: OwnSeconds, Seconds: 4}, {Kind: OwnSeconds, Seconds: 15}}
	for iter := 0; iter < 20000; iter++ {
		whole := Begin(policies[rng.IntN(len(policies))], Initial, 0)
		at := int64(0)
		for range rng.IntN(6) {
			at += int64(rng.IntN(8))
			whole = whole.Change(policies[rng.IntN(len(policies))], at)
		}
		from := int64(rng.IntN(int(at) + 10))
		kept := whole.Forget(from)
		if len(kept.Epochs) > 1 && kept.Epochs[1].Start < from {
			t.Fatalf("Forget(%d) kept %+v", from, kept.Epochs)
		}
		ts := int64(rng.IntN(int(at) + 10))
		own := owns[rng.IntN(len(owns))]
		want, wok := ExpiryInstant(ts, own, whole.Epochs)
		got, gok := kept.Expiry(ts, own)
		switch {
		case wok && want >= from:
			if !gok || got != want {
				t.Fatalf("history %+v forgotten before %d (%+v), ts=%d own=%+v: Expiry = %d, %v; whole history %d", whole, from, kept, ts, own, got, gok, want)
			}
		case gok && (!wok || got != want):
			t.Fatalf("history %+v forgotten before %d (%+v), ts=%d own=%+v: Expiry = %d; whole history %d, %v", whole, from, kept, ts, own, got, want, wok)
		}
	}
}
