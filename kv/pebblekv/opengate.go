package pebblekv

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// A gatedScheduler is the store's compaction scheduler: it grants as many
// compactions at once as the database allows, as Pebble's default does, but
// none until the open of the database has returned.
//
// Pebble's Open, once it has replayed the write-ahead log and flushed it,
// waits for every compaction in progress before it lists the obsolete files.
// The scheduler is registered early in Open, and the flush of the replayed
// log may leave level 0 over its compaction threshold: a compaction out of
// level 0 that starts then takes defaultL0CompactionBytes and the level below
// with it, and Open returns only when it ends. Reopening a million documents
// after a crash took 33-75 ms most times and 1.0-1.4 s when that happened,
// one open in five to twelve (BenchmarkOpenWithDocs; an execution trace
// showed the wait in scanObsoleteFiles); with the gate, the slowest of 20
// took 59 ms. The compaction starts the moment Open returns, in the
// background, while the store serves.
//
// Pebble's default scheduler cannot be wrapped: it is built inside Open,
// and only a variant without its periodic grants is exported. So this one
// is written here, to the same contract (pebble.CompactionScheduler): the
// database asks with TrySchedule when it picks a compaction; once refused it
// waits for the scheduler to offer, which it does when a compaction ends,
// when asked to (UpdateGetAllowedWithoutPermission), and every
// grantInterval, since a flush may raise the allowance unseen. Flushes and
// delete-only compactions do not go through a scheduler.
//
// Lock order: the database calls TrySchedule holding its own mutex, so the
// scheduler never calls a database method that takes it (GetWaitingCompaction,
// Schedule) while holding mu.
type gatedScheduler struct {
	db   pebble.DBForCompaction // set by Register, before any other call
	open atomic.Bool

	mu           sync.Mutex
	running      int
	granting     bool       // one goroutine offers compactions at a time
	grantingDone *sync.Cond // on mu: granting became false
	unregistered bool

	poke     chan struct{} // asks the granter to offer now (buffered, 1)
	stop     chan struct{} // closed by Unregister
	stopOnce sync.Once
	done     chan struct{} // closed when the granter has returned
}

// grantInterval is how often the scheduler offers waiting compactions
// without being asked, as Pebble's default does.
const grantInterval = 100 * time.Millisecond

var (
	_ pebble.CompactionScheduler   = (*gatedScheduler)(nil)
	_ pebble.CompactionGrantHandle = (*gatedScheduler)(nil)
)

// gateCompactions gives po a closed gatedScheduler and returns it: open it
// once pebble.Open has returned.
func gateCompactions(po *pebble.Options) *gatedScheduler {
	s := &gatedScheduler{poke: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	s.grantingDone = sync.NewCond(&s.mu)
	po.Experimental.CompactionScheduler = s
	return s
}

// openGate lets compactions start, and offers the ones that wait.
func (s *gatedScheduler) openGate() {
	s.open.Store(true)
	s.UpdateGetAllowedWithoutPermission()
}

// Register implements [pebble.CompactionScheduler]. It starts the granter,
// which Unregister stops.
func (s *gatedScheduler) Register(_ int, db pebble.DBForCompaction) {
	s.db = db
	go s.granter()
}

// abandon stops the granter of a database whose open failed: Pebble
// unregisters only the databases it closes.
func (s *gatedScheduler) abandon() {
	if s.db != nil {
		s.Unregister()
	}
}

// Unregister implements [pebble.CompactionScheduler]: it returns once no
// offer is in progress, and none is made afterwards.
func (s *gatedScheduler) Unregister() {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unregistered = true
	for s.granting {
		s.grantingDone.Wait()
	}
}

// TrySchedule implements [pebble.CompactionScheduler].
func (s *gatedScheduler) TrySchedule() (bool, pebble.CompactionGrantHandle) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unregistered || !s.open.Load() || s.db.GetAllowedWithoutPermission() <= s.running {
		return false, nil
	}
	s.running++
	return true, s
}

// UpdateGetAllowedWithoutPermission implements [pebble.CompactionScheduler]:
// the granter offers compactions now.
func (s *gatedScheduler) UpdateGetAllowedWithoutPermission() {
	select {
	case s.poke <- struct{}{}:
	default: // an offer is due already
	}
}

// Started implements [pebble.CompactionGrantHandle].
func (s *gatedScheduler) Started() {}

// MeasureCPU implements [pebble.CompactionGrantHandle].
func (s *gatedScheduler) MeasureCPU(pebble.CompactionGoroutineKind) {}

// CumulativeStats implements [pebble.CompactionGrantHandle].
func (s *gatedScheduler) CumulativeStats(pebble.CompactionGrantHandleStats) {}

// Done implements [pebble.CompactionGrantHandle]: a compaction ended, and
// another may take its place.
func (s *gatedScheduler) Done() {
	s.mu.Lock()
	s.running--
	s.mu.Unlock()
	s.offer()
}

// granter offers compactions every grantInterval and when poked, until
// Unregister.
func (s *gatedScheduler) granter() {
	defer close(s.done)
	tick := time.NewTicker(grantInterval)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
		case <-s.poke:
		case <-s.stop:
			return
		}
		s.offer()
	}
}

// offer grants the database as many waiting compactions as it allows beyond
// those running, once the gate is open.
func (s *gatedScheduler) offer() {
	s.mu.Lock()
	for s.granting {
		s.grantingDone.Wait()
	}
	if s.unregistered || !s.open.Load() {
		s.mu.Unlock()
		return
	}
	n := s.db.GetAllowedWithoutPermission() - s.running
	if n <= 0 {
		s.mu.Unlock()
		return
	}
	s.granting = true
	s.mu.Unlock()
	for ; n > 0; n-- {
		if waiting, _ := s.db.GetWaitingCompaction(); !waiting {
			break
		}
		if !s.db.Schedule(s) {
			break
		}
		s.mu.Lock()
		s.running++
		s.mu.Unlock()
	}
	s.mu.Lock()
	s.granting = false
	s.grantingDone.Broadcast()
	s.mu.Unlock()
}
