package engine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/kv"
	"github.com/lethe-db/lethe/ru"
	"github.com/lethe-db/lethe/throttle"
)

// Offers are not stored on their own: a database or container with
// provisioned throughput has one, derived from the Throughput in its record,
// and so does every container without throughput of its own in a database
// without shared throughput: its default offer of 400 RU/s (defaultOffer),
// derived from nothing but the container, as in Cosmos DB. Its id is "d"
// (database) or "c" (container) and the resource's RID counter in base 36:
// short, lower case (clients sign offer links in lower case), unique, and
// stable for the resource's life, a default offer replaced keeping its id.
// It goes with the resource.

// offerRef is one offer and where its throughput is stored.
type offerRef struct {
	id   string
	self string // the resource's _self
	rid  string // the resource's _rid
	tp   *Throughput
	key  []byte // the record's key
	db   *dbRecord
	c    *collRecord
}

func dbOfferID(db *dbRecord) string {
	r := db.rid()
	return "d" + strconv.FormatUint(uint64(binary.LittleEndian.Uint32(r[:])), 36)
}

func collOfferID(c *collRecord) string {
	r := c.rid()
	return "c" + strconv.FormatUint(uint64(binary.LittleEndian.Uint32(r[4:])&^0x80000000), 36)
}

// listOfferRefs returns every offer: databases' first, then containers'. The
// records are shared (metaCache): copy before modifying.
func listOfferRefs(r kv.Reader) ([]offerRef, error) {
	var out []offerRef
	dbs := map[string]*dbRecord{} // by name
	it := r.Scan([]byte{pfxDatabase}, []byte{pfxDatabase + 1}, false)
	for it.Next() {
		db, err := decodeDatabase(it.Key(), it.Value())
		if err != nil {
			it.Close()
			return nil, fmt.Errorf("decode database: %w", err)
		}
		dbs[string(it.Key()[1:])] = db
		if db.Throughput != nil {
			out = append(out, offerRef{id: dbOfferID(db), self: "dbs/" + db.RID + "/", rid: db.RID, tp: db.Throughput, key: append([]byte(nil), it.Key()...), db: db})
		}
	}
	err := it.Err()
	it.Close()
	if err != nil {
		return nil, err
	}
	it = r.Scan([]byte{pfxContainer}, []byte{pfxContainer + 1}, false)
	defer it.Close()
	for it.Next() {
		c, _, err := decodeContainer(it.Key(), it.Value())
		if err != nil {
			return nil, fmt.Errorf("decode container: %w", err)
		}
		db := dbs[c.DB]
		if db == nil {
			continue // cannot happen: a database and its containers go in one transaction
		}
		if tp := containerThroughput(db, c); tp != nil {
			out = append(out, offerRef{id: collOfferID(c), self: "dbs/" + db.RID + "/colls/" + c.RID + "/", rid: c.RID, tp: tp, key: append([]byte(nil), it.Key()...), c: c})
		}
	}
	return out, it.Err()
}

func findOfferRef(r kv.Reader, id string) (offerRef, error) {
	refs, err := listOfferRefs(r)
	if err != nil {
		return offerRef{}, err
	}
	for _, o := range refs {
		if strings.EqualFold(o.id, id) {
			return o, nil
		}
	}
	return offerRef{}, notFound()
}

// offerJSON is an offer as served, in Cosmos DB's member order.
type offerJSON struct {
	ID              string       `json:"id"`
	RID             string       `json:"_rid"`
	Self            string       `json:"_self"`
	Resource        string       `json:"resource"`
	OfferResourceID string       `json:"offerResourceId"`
	OfferType       string       `json:"offerType"`
	OfferVersion    string       `json:"offerVersion"`
	Content         offerContent `json:"content"`
	ETag            string       `json:"_etag"`
	TS              int64        `json:"_ts"`
}

type offerContent struct {
	OfferThroughput int                `json:"offerThroughput"`
	Autopilot       *autopilotSettings `json:"offerAutopilotSettings,omitempty"`
}

type autopilotSettings struct {
	MaxThroughput int `json:"maxThroughput"`
}

// resource renders the offer. An autoscale offer's offerThroughput is the
// throughput it is scaled to now (throttle.AutoscaleThroughput of the last
// second's use); its budget is always the maximum.
func (e *Engine) offerResource(o offerRef) Resource {
	content := offerContent{OfferThroughput: o.tp.Manual}
	if o.tp.AutoscaleMax > 0 {
		used := 0.0
		if b := e.budgets.peek(o.rid); b != nil {
			used = b.Used(e.opts.Now())
		}
		content = offerContent{
			OfferThroughput: throttle.AutoscaleThroughput(o.tp.AutoscaleMax, used),
			Autopilot:       &autopilotSettings{MaxThroughput: o.tp.AutoscaleMax},
		}
	}
	ts := o.tp.TS
	if o.tp.Default {
		ts = defaultOfferTS(o.c) // read from the body only for the offers rendered
	}
	body, _ := json.Marshal(offerJSON{
		ID: o.id, RID: o.id, Self: "offers/" + o.id + "/", Resource: o.self, OfferResourceID: o.rid,
		OfferType: "Invalid", OfferVersion: "V2", Content: content, ETag: o.tp.ETag, TS: ts,
	})
	return Resource{Body: body, ETag: o.tp.ETag, RID: o.id, Charge: ru.Metadata}
}

// ListOffers returns the offer of every database and container with
// provisioned throughput, and the default offer of every container without
// throughput of its own in a database without shared throughput: the /offers
// feed, which queries filter.
func (e *Engine) ListOffers(ctx context.Context) ([]Resource, error) {
	defer e.begin()()
	var refs []offerRef
	err := e.store.View(ctx, func(r kv.Reader) error {
		var err error
		refs, err = listOfferRefs(r)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list offers: %w", err)
	}
	out := make([]Resource, len(refs))
	for i, o := range refs {
		out[i] = e.offerResource(o)
	}
	return out, nil
}

// ReadOffer returns one offer by id. Returns NotFound if no resource has it.
func (e *Engine) ReadOffer(ctx context.Context, id string) (Resource, error) {
	defer e.begin()()
	var o offerRef
	err := e.store.View(ctx, func(r kv.Reader) error {
		var err error
		o, err = findOfferRef(r, id)
		return err
	})
	if err != nil {
		return Resource{}, err
	}
	return e.offerResource(o), nil
}

// ReplaceOffer changes an offer's throughput within its kind: a manual value
// for a manual offer, an autoscale maximum for an autoscale one. The
// resource's budget is rebuilt at the new rate. A container's default offer
// replaced becomes its explicit throughput, stored and enforced like one set
// at creation (Options.EnforceDefaultThroughput or not). Returns NotFound (no such
// offer), PreconditionFailed (ifMatch is neither empty, "*" nor the offer's
// etag) and BadRequest (body, kind change, limits).
func (e *Engine) ReplaceOffer(ctx context.Context, id string, body []byte, ifMatch string) (Resource, error) {
	defer e.begin()()
	now, err := e.now(ctx)
	if err != nil {
		return Resource{}, err
	}
	var o offerRef
	err = e.store.Update(ctx, func(tx kv.Tx) error {
		var err error
		if o, err = findOfferRef(tx, id); err != nil {
			return err
		}
		if ifMatch != "" && ifMatch != "*" && ifMatch != o.tp.ETag {
			return lethe.Errorf(lethe.CodePreconditionFailed, "Operation cannot be performed because one of the specified precondition is not met.")
		}
		tp, err := parseOfferContent(body, o.id, o.rid, o.tp)
		if err != nil {
			return err
		}
		tp.ETag, tp.TS = etagFor(e.nextLSN()), now
		if o.tp.Default {
			// The default offer becomes explicit, like throughput set at
			// creation: enforced whatever EnforceDefaultThroughput says.
			if err := e.markProvisioned(tx); err != nil {
				return err
			}
		}
		var v []byte
		if o.db != nil {
			rec := *o.db
			rec.Throughput = tp
			v, err = json.Marshal(&rec)
		} else {
			rec := *o.c
			rec.Throughput = tp
			v, err = json.Marshal(&rec)
		}
		if err != nil {
			return err
		}
		o.tp = tp
		return tx.Put(o.key, v)
	})
	if err != nil {
		return Resource{}, err
	}
	e.recordsChanged()
	e.budgets.drop(o.rid)
	return e.offerResource(o), nil
}

// stampThroughput returns a copy of tp for a resource created at now, with a
// fresh offer etag; nil for nil.
func (e *Engine) stampThroughput(tx kv.Tx, tp *Throughput, now int64) (*Throughput, error) {
	if tp == nil {
		return nil, nil
	}
	if err := e.markProvisioned(tx); err != nil {
		return nil, err
	}
	out := Throughput{Manual: tp.Manual, AutoscaleMax: tp.AutoscaleMax, ETag: etagFor(e.nextLSN()), TS: now}
	return &out, nil
}
