package engine

// WakePurger asks the background purger to start a pass now instead of at its
// next PurgeInterval tick. Call it after moving an injected clock (Options.Now)
// forward: documents that the jump expired are then physically deleted soon
// after, not a whole interval later. Expiry itself never waits for the purger;
// this only hastens reclaiming space. It never blocks, and it does nothing
// useful when the purger is disabled or no background goroutine runs (call
// Purge then).
func (e *Engine) WakePurger() { e.purger.kick() }
