package gateway

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/clock"
	"github.com/lethe-db/lethe/engine"
)

// Lethe's admin API: what the web console and tests need that the Cosmos DB
// REST API lacks. Always served:
//
//	GET  /_lethe/clock   {"now": <unix seconds>, "nowRfc3339": "...", "manual": bool}
//	GET  /_lethe/gateway this gateway's registration on a shared database
//	                     (see gatewayBody)
//	GET  /_lethe/dbs/{db}/colls/{coll}/ttl
//	                     the container's TTL status: its policy, the purge's
//	                     backlog, the documents expiring in each coming
//	                     minute (60) and hour (24); see ttlStatusBody
//	GET  /_lethe/dbs/{db}/colls/{coll}/items
//	                     a page of the container's read feed with each
//	                     document's expiry instant under the server's rule
//	                     (x-ms-max-item-count, x-ms-continuation as for the
//	                     read feed); see itemsBody
//
// Only when Options.ManualClock is set (lethe serve --clock=manual):
//
//	POST /_lethe/clock   {"advanceSeconds": N} or {"set": <unix seconds>}; answers like GET
//	POST /_lethe/purge   purges every expired document now, and trims the change
//	                     feed logs past their retention; {"purged": n}
//
// Its paths start with the segment "_lethe", which no Cosmos DB path does (they
// start with "dbs" or "offers", or are "/"), so they never shadow a Cosmos
// resource. A request is authenticated with the master key in either of two
// ways: the header "x-lethe-master-key: <base64 master key>", compared in
// constant time; or, when that header is absent, a Cosmos master-key signature
// exactly as for any other path, with the resource type and link derived from
// the path by the usual rule (see resourceOf): for /_lethe/clock the type
// is "_lethe" and the link "_lethe/clock", for /_lethe/dbs/d/colls/c/ttl the
// type "c" and the link "_lethe/dbs/d/colls/c/ttl". Request dates are checked
// against Options.Now, the wall clock, never against the manual clock.

// adminSegment is the first path segment of the admin API.
const adminSegment = "_lethe"

// adminKeyHeader carries the base64 master key on admin requests, for tools
// that do not sign requests.
const adminKeyHeader = "X-Lethe-Master-Key"

// Bounds on clock moves, so that every time stays far inside what the engine's
// int64 seconds and Go's time.Duration can hold.
const (
	maxAdvanceSeconds = 100 * 366 * 24 * 3600 // about a century
	maxUnixSeconds    = 253402300799          // 9999-12-31T23:59:59Z
)

// serveAdmin authenticates and routes a request whose path starts with adminSegment.
func (s *Server) serveAdmin(w http.ResponseWriter, rq *request) {
	if err := s.checkAdminAuth(rq); err != nil {
		s.writeError(w, rq, err)
		return
	}
	seg := rq.segs
	switch {
	case len(seg) == 2 && seg[1] == "clock":
		s.method(w, rq, map[string]handler{"GET": s.getClock, "POST": s.manualOnly(s.postClock)})
	case len(seg) == 2 && seg[1] == "gateway":
		s.method(w, rq, map[string]handler{"GET": s.getGateway})
	case len(seg) == 2 && seg[1] == "purge":
		s.method(w, rq, map[string]handler{"POST": s.manualOnly(s.postPurge)})
	case len(seg) == 6 && seg[1] == "dbs" && seg[3] == "colls" && seg[5] == "ttl":
		s.method(w, rq, map[string]handler{"GET": s.getTTLStatus})
	case len(seg) == 6 && seg[1] == "dbs" && seg[3] == "colls" && seg[5] == "items":
		s.method(w, rq, map[string]handler{"GET": s.getItems})
	default:
		s.writeError(w, rq, lethe.Errorf(lethe.CodeNotFound, "The path '%s' is not part of the Lethe admin API, which serves /_lethe/clock, /_lethe/purge, and /_lethe/dbs/{db}/colls/{coll}/ttl and /items.", truncateInput(rq.r.URL.Path, 200)))
	}
}

// manualOnly serves h only when the server runs a manual clock.
func (s *Server) manualOnly(h handler) handler {
	return func(w http.ResponseWriter, rq *request) {
		if s.opts.ManualClock == nil {
			s.writeError(w, rq, lethe.Errorf(lethe.CodeNotFound, "POST %s needs the manual clock: start the server with --clock=manual (or LETHE_CLOCK=manual) to move the clock and purge on demand.", truncateInput(rq.r.URL.Path, 100)))
			return
		}
		h(w, rq)
	}
}

// checkAdminAuth accepts the x-lethe-master-key header when present and a
// master-key signature otherwise; see the admin API's description above.
func (s *Server) checkAdminAuth(rq *request) error {
	if vs := rq.r.Header.Values(adminKeyHeader); len(vs) > 0 {
		given, err := base64.StdEncoding.DecodeString(strings.TrimSpace(vs[0]))
		// Comparing digests keeps the comparison constant-time whatever the
		// lengths of the keys.
		g, k := sha256.Sum256(given), sha256.Sum256(s.opts.Key)
		if err != nil || len(vs) != 1 || subtle.ConstantTimeCompare(g[:], k[:]) != 1 {
			return authErrorf("The %s header does not hold the server's master key (base64, as given to --key).", strings.ToLower(adminKeyHeader))
		}
		return nil
	}
	if rq.r.Header.Get("Authorization") == "" {
		return authErrorf("The Lethe admin API needs the master key: send it in the %s header (base64, as given to --key), or sign the request like any Cosmos DB request.", strings.ToLower(adminKeyHeader))
	}
	resType, resLink := resourceOf(rq.segs)
	return checkMasterKey(rq.r, resType, resLink, s.opts.Key, s.opts.Now())
}

// clockBody is the response of the clock endpoints.
type clockBody struct {
	Now        int64  `json:"now"`
	NowRFC3339 string `json:"nowRfc3339"`
	// Manual reports that the clock moves only through POST /_lethe/clock.
	Manual bool `json:"manual"`
}

// writeClock answers with the engine's current time, which is what operations
// see: the manual clock, never below the persisted high-water mark. Reading it
// also persists a new high-water mark, so a move survives a restart.
func (s *Server) writeClock(w http.ResponseWriter, rq *request) {
	now, err := s.opts.Engine.Now(rq.r.Context())
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.writeJSON(w, http.StatusOK, clockBody{Now: now, NowRFC3339: rfc3339(now), Manual: s.opts.ManualClock != nil})
}

func (s *Server) getClock(w http.ResponseWriter, rq *request) { s.writeClock(w, rq) }

// postClock moves the manual clock forward, then wakes the purger so that what
// the move expired is also physically deleted soon.
func (s *Server) postClock(w http.ResponseWriter, rq *request) {
	body, err := rq.body()
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	mv, err := parseClockMove(body)
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	if err := s.moveClock(rq, mv); err != nil {
		s.writeError(w, rq, err)
		return
	}
	s.opts.Engine.WakePurger()
	s.writeClock(w, rq)
}

// moveClock applies mv to the manual clock.
func (s *Server) moveClock(rq *request, mv clockMove) error {
	if !mv.set {
		_, err := s.opts.ManualClock.Advance(time.Duration(mv.seconds) * time.Second)
		return err
	}
	now, err := s.opts.Engine.Now(rq.r.Context())
	if err != nil {
		return err
	}
	switch {
	case mv.seconds < now:
		return backwardsError(mv.seconds, now)
	case mv.seconds == now: // already there; the manual clock may be within that second
		return nil
	}
	if _, err := s.opts.ManualClock.Set(time.Unix(mv.seconds, 0)); err != nil {
		if errors.Is(err, clock.ErrBackwards) { // another request moved it meanwhile
			return backwardsError(mv.seconds, s.opts.ManualClock.Now().Unix())
		}
		return err
	}
	return nil
}

func backwardsError(to, now int64) error {
	return lethe.Errorf(lethe.CodeBadRequest, "The server clock never goes backwards: 'set' is %d (%s) but the clock is already at %d (%s).",
		to, time.Unix(to, 0).UTC().Format(time.RFC3339), now, time.Unix(now, 0).UTC().Format(time.RFC3339))
}

// postPurge runs the purge to completion and reports how many documents it deleted.
func (s *Server) postPurge(w http.ResponseWriter, rq *request) {
	n, err := s.opts.Engine.Purge(rq.r.Context())
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	rq.writeJSON(w, http.StatusOK, struct {
		Purged int `json:"purged"`
	}{n})
}

// clockMove is a decoded POST /_lethe/clock body: advance by seconds, or set
// the clock to seconds (Unix time) when set is true.
type clockMove struct {
	seconds int64
	set     bool
}

// clockBodyHelp ends every message about a bad clock body.
const clockBodyHelp = `The body must be {"advanceSeconds": N} with N a positive integer, or {"set": T} with T a time in Unix seconds not earlier than the server's clock.`

// parseClockMove decodes a POST /_lethe/clock body. It returns a BadRequest
// error for anything but a JSON object with exactly one of advanceSeconds (an
// integer from 1 to maxAdvanceSeconds) or set (an integer from 1 to
// maxUnixSeconds).
func parseClockMove(body []byte) (clockMove, error) {
	bad := func(format string, args ...any) error {
		return lethe.Errorf(lethe.CodeBadRequest, format+" "+clockBodyHelp, args...)
	}
	if err := engine.CheckJSON(body); err != nil { // a duplicate name would be lost in the map
		return clockMove{}, bad("%s", lethe.ErrorMessage(err))
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil || members == nil {
		return clockMove{}, bad("The request body is not a JSON object.")
	}
	if len(members) != 1 {
		return clockMove{}, bad("The request body has %d members; it needs exactly one.", len(members))
	}
	var name string
	var raw json.RawMessage
	for name, raw = range members { // the only member
	}
	var mv clockMove
	limit := int64(maxAdvanceSeconds)
	switch name {
	case "advanceSeconds":
	case "set":
		mv.set, limit = true, maxUnixSeconds
	default:
		return clockMove{}, bad("The member '%s' is not known.", truncateInput(name, 50))
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < 1 || n > limit {
		return clockMove{}, bad("The value of '%s' must be an integer from 1 to %d, not %s.", name, limit, truncateInput(string(raw), 50))
	}
	mv.seconds = n
	return mv, nil
}

// rfc3339 renders Unix seconds as the console and the admin API show times.
func rfc3339(sec int64) string { return time.Unix(sec, 0).UTC().Format(time.RFC3339) }

// ttlStatusBody is the response of GET /_lethe/dbs/{db}/colls/{coll}/ttl.
type ttlStatusBody struct {
	Now int64 `json:"now"`
	// DefaultTTL is the container's defaultTtl: absent (TTL off), -1 or n.
	DefaultTTL *int64 `json:"defaultTtl,omitempty"`
	// Backlog is the expired documents not yet physically deleted.
	Backlog struct {
		Documents int64 `json:"documents"`
		Bytes     int64 `json:"bytes"`
		// OldestExpired is when the longest-waiting of them expired (absent
		// when there is none), OldestAgeSeconds how long ago that was.
		OldestExpired    string `json:"oldestExpired,omitempty"`
		OldestAgeSeconds *int64 `json:"oldestAgeSeconds,omitempty"`
	} `json:"backlog"`
	// Purged counts the documents the purger deleted since the server started.
	Purged int64 `json:"purged"`
	// Upcoming counts documents by when they will expire: ByMinute[i] those
	// at an instant in (now + 60i, now + 60(i+1)], ByHour[i] likewise by hour.
	Upcoming struct {
		ByMinute []int64 `json:"byMinute"`
		ByHour   []int64 `json:"byHour"`
	} `json:"upcoming"`
	// PurgeLease names, on a database shared by several gateways, the
	// gateway that purges the container (its id in GET /_lethe/gateway) and
	// when its lease lapses unless renewed; absent when none holds it, and
	// always on an embedded store.
	PurgeLease *purgeLeaseBody `json:"purgeLease,omitempty"`
}

type purgeLeaseBody struct {
	Holder  string `json:"holder"`
	Expires string `json:"expires"`
}

// gatewayBody is the response of GET /_lethe/gateway.
type gatewayBody struct {
	// Shared is true on a database shared by gateways (--store postgres://).
	Shared bool `json:"shared"`
	// ID is this gateway's registration, unique per process start; Slot its
	// slot in the database's gateway registry; OtherGateways the other live
	// gateways it saw at its last renewal (every 3 s).
	ID            string `json:"id,omitempty"`
	Slot          int    `json:"slot"`
	OtherGateways int    `json:"otherGateways"`
}

func (s *Server) getGateway(w http.ResponseWriter, rq *request) {
	g := s.opts.Engine.Gateway()
	rq.writeJSON(w, http.StatusOK, gatewayBody{Shared: g.Shared, ID: g.ID, Slot: g.Slot, OtherGateways: g.Others})
}

func (s *Server) getTTLStatus(w http.ResponseWriter, rq *request) {
	st, err := s.opts.Engine.ContainerTTLStatus(rq.r.Context(), rq.segs[2], rq.segs[4])
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	var b ttlStatusBody
	b.Now, b.DefaultTTL, b.Purged = st.Now, st.Policy.DefaultTTL(), st.Purged
	b.Backlog.Documents, b.Backlog.Bytes = st.PendingDocuments, st.PendingBytes
	if !st.OldestPending.IsZero() {
		at := st.OldestPending.Unix()
		age := max(st.Now-at, 0)
		b.Backlog.OldestExpired, b.Backlog.OldestAgeSeconds = rfc3339(at), &age
	}
	b.Upcoming.ByMinute, b.Upcoming.ByHour = st.ByMinute[:], st.ByHour[:]
	if st.PurgeLease.Holder != "" {
		b.PurgeLease = &purgeLeaseBody{Holder: st.PurgeLease.Holder, Expires: st.PurgeLease.Expires.UTC().Format(time.RFC3339Nano)}
	}
	rq.writeJSON(w, http.StatusOK, b)
}

// itemsBody is the response of GET /_lethe/dbs/{db}/colls/{coll}/items.
type itemsBody struct {
	Items []itemBody `json:"items"`
	// Continuation resumes the listing (as x-ms-continuation); absent at the end.
	Continuation  string  `json:"continuation,omitempty"`
	RequestCharge float64 `json:"requestCharge"`
}

// itemBody is one document with its expiry instant under the container's
// current policy: Expires (RFC 3339) and ExpiresAt (Unix seconds) are
// absent when it never expires.
type itemBody struct {
	Document  json.RawMessage `json:"document"`
	Expires   string          `json:"expires,omitempty"`
	ExpiresAt int64           `json:"expiresAt,omitempty"`
}

func (s *Server) getItems(w http.ResponseWriter, rq *request) {
	n, err := rq.maxItemCount()
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	page, err := s.opts.Engine.ReadFeed(rq.r.Context(), rq.segs[2], rq.segs[4], engine.FeedOptions{
		MaxItems: n, Continuation: rq.header("x-ms-continuation"),
	})
	if err != nil {
		s.writeError(w, rq, err)
		return
	}
	b := itemsBody{Items: make([]itemBody, len(page.Docs)), Continuation: page.Continuation, RequestCharge: page.Charge}
	for i, doc := range page.Docs {
		b.Items[i].Document = doc
		if at := page.Expires[i]; at != 0 {
			b.Items[i].Expires, b.Items[i].ExpiresAt = rfc3339(at), at
		}
	}
	rq.charge = page.Charge
	rq.writeJSON(w, http.StatusOK, b)
}
