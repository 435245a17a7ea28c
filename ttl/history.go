package ttl

// History is what a change feed reader needs of a container's TTL history to
// place expiry records: the epochs that may still expire a document inside
// the feed's retained window, the last one open-ended, and Base, the
// watermarks summarising every epoch before the first. Folding old epochs
// into Base keeps the history small however often the policy changes; a
// document Base dooms expired before the first kept epoch began, which is
// before any position a reader may hold.
type History struct {
	Base   Watermarks `json:"base"`
	Epochs []Epoch    `json:"epochs"`
}

// Begin starts a history at instant now under policy p; w summarises every
// epoch before now (the container's watermarks with p's own epoch, if any,
// closed at now).
func Begin(p Policy, w Watermarks, now int64) History {
	return History{Base: w, Epochs: []Epoch{{Start: now, Policy: p}}}
}

// Change returns the history with policy p in force from now on.
func (h History) Change(p Policy, now int64) History {
	h.Epochs = append(h.Epochs[:len(h.Epochs):len(h.Epochs)], Epoch{Start: now, Policy: p})
	return h
}

// Forget folds into Base the epochs that ended before from: afterwards the
// history places every expiry at or after from as before, and no longer
// knows the older ones.
func (h History) Forget(from int64) History {
	for len(h.Epochs) > 1 && h.Epochs[1].Start < from {
		h.Base = h.Base.Close(h.Epochs[0].Policy, h.Epochs[1].Start)
		h.Epochs = h.Epochs[1:]
	}
	return h
}

// Expiry returns the instant at which a document last written at ts with own
// ttl interpretation own expires (see ExpiryInstant), and false when it
// never does under this history or expired before its first epoch began.
func (h History) Expiry(ts int64, own Own) (int64, bool) {
	if len(h.Epochs) == 0 || Expired(h.Epochs[0].Start, ts, own, Off, h.Base) {
		return 0, false
	}
	return ExpiryInstant(ts, own, h.Epochs)
}
