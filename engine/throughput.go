package engine

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/lethe-db/lethe"
	"github.com/lethe-db/lethe/jsonv"
)

// Throughput is a resource's provisioned throughput as stored in its database
// or container record (absent: none). Exactly one of Manual and AutoscaleMax
// is set. A database's throughput is shared by its containers that have none
// of their own; a container with none anywhere is unlimited.
type Throughput struct {
	// Manual is the fixed RU/s of a manual offer; 0 for autoscale.
	Manual int `json:"manual,omitempty"`
	// AutoscaleMax is the maximum RU/s of an autoscale offer; 0 for manual.
	AutoscaleMax int `json:"autoscaleMax,omitempty"`
	// ETag and TS are the offer's _etag and _ts; both change when the offer
	// is replaced.
	ETag string `json:"etag,omitempty"`
	TS   int64  `json:"ts,omitempty"`
	// Default marks a container's default offer (see defaultOffer): derived,
	// never stored, and enforced only under
	// Options.EnforceDefaultThroughput.
	Default bool `json:"-"`
}

// defaultManualRU is the throughput of the offer a container gets when it is
// created without throughput in a database without shared throughput, as in
// Cosmos DB and its emulator.
const defaultManualRU = 400

// defaultOffer returns the default offer of container c: 400 RU/s manual.
// It is derived, not stored, so containers of every data directory have one
// without a migration. Its etag is fixed for the container's life: the
// container's RID counter in an etag no write can produce (write etags carry
// an LSN, microseconds since 1970, whose top 16 bits are never zero). Its
// _ts (TS) is left 0: defaultOfferTS gives it for the offers API.
func defaultOffer(c *collRecord) *Throughput {
	r := c.rid()
	n := uint64(binary.LittleEndian.Uint32(r[4:]) &^ 0x80000000)
	return &Throughput{Manual: defaultManualRU, ETag: fmt.Sprintf(`"00000000-0000-0000-0000-%012x"`, n), Default: true}
}

// defaultOfferTS is the _ts of container c's default offer: the container's
// _ts (0 if its body has none).
func defaultOfferTS(c *collRecord) int64 {
	var body struct {
		TS int64 `json:"_ts"`
	}
	_ = json.Unmarshal(c.Body, &body)
	return body.TS
}

// containerThroughput returns the throughput of container c's own offer: its
// explicit throughput (set at creation or by replacing its offer), else its
// default offer; nil when it has none, because its database's shared
// throughput governs it. The number of RU/s is its budget().
func containerThroughput(db *dbRecord, c *collRecord) *Throughput {
	switch {
	case c.Throughput != nil:
		return c.Throughput
	case db.Throughput != nil:
		return nil
	}
	return defaultOffer(c)
}

// budget is the RU/s the resource's bucket enforces: the manual value, or an
// autoscale offer's maximum.
func (t *Throughput) budget() int {
	if t.Manual > 0 {
		return t.Manual
	}
	return t.AutoscaleMax
}

// Cosmos DB's limits on provisioned throughput.
const (
	minManualRU    = 400
	maxManualRU    = 1_000_000
	manualStepRU   = 100
	minAutoscaleRU = 1000
	maxAutoscaleRU = 1_000_000
	autoscaleStep  = 1000
)

func validManual(n int64) error {
	if n < minManualRU || n > maxManualRU || n%manualStepRU != 0 {
		return lethe.Errorf(lethe.CodeBadRequest, "The offer throughput %d is invalid: manual throughput must be between %d and %d RU/s and a multiple of %d.", n, minManualRU, maxManualRU, manualStepRU)
	}
	return nil
}

func validAutoscale(n int64) error {
	if n < minAutoscaleRU || n > maxAutoscaleRU || n%autoscaleStep != 0 {
		return lethe.Errorf(lethe.CodeBadRequest, "The autoscale max throughput %d is invalid: it must be between %d and %d RU/s and a multiple of %d.", n, minAutoscaleRU, maxAutoscaleRU, autoscaleStep)
	}
	return nil
}

// wholeNumber reads a JSON number that must be an integer.
func wholeNumber(raw json.RawMessage) (int64, bool) {
	var f float64
	if len(raw) == 0 || json.Unmarshal(raw, &f) != nil || f != float64(int64(f)) {
		return 0, false
	}
	return int64(f), true
}

// ParseThroughput validates the throughput a create request asks for, from the
// x-ms-offer-throughput (manual RU/s) and x-ms-cosmos-offer-autopilot-settings
// ({"maxThroughput": N}) headers. Both empty: nil, no provisioned throughput.
// Returns BadRequest when both are given or a value is invalid.
func ParseThroughput(offerThroughput, autopilotSettings string) (*Throughput, error) {
	manual, auto := strings.TrimSpace(offerThroughput), strings.TrimSpace(autopilotSettings)
	switch {
	case manual == "" && auto == "":
		return nil, nil
	case manual != "" && auto != "":
		return nil, lethe.Errorf(lethe.CodeBadRequest, "Specify either x-ms-offer-throughput (manual) or x-ms-cosmos-offer-autopilot-settings (autoscale), not both.")
	case manual != "":
		n, err := strconv.ParseInt(manual, 10, 64)
		if err != nil {
			return nil, lethe.Errorf(lethe.CodeBadRequest, "The x-ms-offer-throughput header value '%s' is invalid: use a whole number of RU/s.", truncate(manual, 50))
		}
		if err := validManual(n); err != nil {
			return nil, err
		}
		return &Throughput{Manual: int(n)}, nil
	}
	var s struct {
		MaxThroughput json.RawMessage `json:"maxThroughput"`
	}
	if _, err := jsonv.Parse([]byte(auto)); err != nil {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The x-ms-cosmos-offer-autopilot-settings header must be a JSON object like {\"maxThroughput\":4000}; it is not valid JSON: %s.", err.Error())
	}
	if err := json.Unmarshal([]byte(auto), &s); err != nil {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The x-ms-cosmos-offer-autopilot-settings header must be a JSON object like {\"maxThroughput\":4000}.")
	}
	n, ok := wholeNumber(s.MaxThroughput)
	if !ok {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The x-ms-cosmos-offer-autopilot-settings header needs a whole number 'maxThroughput'.")
	}
	if err := validAutoscale(n); err != nil {
		return nil, err
	}
	return &Throughput{AutoscaleMax: int(n)}, nil
}

// parseOfferContent reads the new throughput from an offer replace body,
// {"content": {"offerThroughput": N}} for manual offers and
// {"content": {"offerAutopilotSettings": {"maxThroughput": M}}} for autoscale
// ones (an offerThroughput next to it, as a read offer carries, is ignored).
// The kind cannot change. Returns BadRequest.
func parseOfferContent(body []byte, id, resourceRID string, old *Throughput) (*Throughput, error) {
	var o struct {
		ID              *string `json:"id"`
		OfferResourceID *string `json:"offerResourceId"`
		Content         *struct {
			OfferThroughput json.RawMessage `json:"offerThroughput"`
			Autopilot       *struct {
				MaxThroughput json.RawMessage `json:"maxThroughput"`
			} `json:"offerAutopilotSettings"`
		} `json:"content"`
	}
	if err := CheckJSON(body); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(body, &o); err != nil {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The offer must be a JSON object with a 'content' object: %s", err.Error())
	}
	if o.ID != nil && !strings.EqualFold(*o.ID, id) {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The offer id in the body ('%s') does not match the offer being replaced ('%s').", truncate(*o.ID, 100), id)
	}
	if o.OfferResourceID != nil && *o.OfferResourceID != resourceRID {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The offerResourceId in the body ('%s') does not match the offer's resource ('%s'); an offer cannot move.", truncate(*o.OfferResourceID, 100), resourceRID)
	}
	if o.Content == nil {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The offer needs a 'content' object with 'offerThroughput' or 'offerAutopilotSettings'.")
	}
	if o.Content.Autopilot != nil {
		if old.AutoscaleMax == 0 {
			return nil, lethe.Errorf(lethe.CodeBadRequest, "The offer is manual; it cannot be replaced with autoscale settings (migrating between manual and autoscale is not supported).")
		}
		n, ok := wholeNumber(o.Content.Autopilot.MaxThroughput)
		if !ok {
			return nil, lethe.Errorf(lethe.CodeBadRequest, "The offer's offerAutopilotSettings needs a whole number 'maxThroughput'.")
		}
		if err := validAutoscale(n); err != nil {
			return nil, err
		}
		return &Throughput{AutoscaleMax: int(n)}, nil
	}
	if len(o.Content.OfferThroughput) == 0 || string(o.Content.OfferThroughput) == "null" {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The offer needs content.offerThroughput (manual) or content.offerAutopilotSettings (autoscale).")
	}
	if old.Manual == 0 {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The offer is autoscale; replace it with content.offerAutopilotSettings.maxThroughput (migrating between autoscale and manual is not supported).")
	}
	n, ok := wholeNumber(o.Content.OfferThroughput)
	if !ok {
		return nil, lethe.Errorf(lethe.CodeBadRequest, "The offer's offerThroughput must be a whole number of RU/s.")
	}
	if err := validManual(n); err != nil {
		return nil, err
	}
	return &Throughput{Manual: int(n)}, nil
}
