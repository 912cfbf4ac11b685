package reliability_test

import (
	"sync"
)

// overlap counts holders: exclusive ones (a mutex, a write lock) and shared ones (read
// locks, semaphore leases), and counts a violation whenever more hold than allowed. A
// holder counts from the moment it has its lease until it releases it or its lease's Done
// closes (then it must stop working).
type overlap struct {
	mu         sync.Mutex
	maxShared  int // holders allowed together (1 for a mutex, N for a semaphore)
	excl       int
	shared     int
	violations int
	entries    int
}

func newOverlap(maxShared int) *overlap { return &overlap{maxShared: maxShared} }

func (o *overlap) enter(exclusive bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.entries++
	if exclusive {
		o.excl++
	} else {
		o.shared++
	}
	if o.excl > 1 || (o.excl > 0 && o.shared > 0) || o.shared > o.maxShared {
		o.violations++
	}
}

func (o *overlap) exit(exclusive bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if exclusive {
		o.excl--
	} else {
		o.shared--
	}
}

func (o *overlap) counts() (entries, violations int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.entries, o.violations
}

// store is the fencing checker: a record with a version that holders read and then write
// back incremented, presenting their fencing token. Fenced, it rejects a write whose token
// is lower than the highest seen. A write accepted although its version is stale is a lost
// update: a violation.
type store struct {
	mu         sync.Mutex
	fenced     bool
	highest    int64
	version    int64
	accepted   int
	rejected   int
	violations int
}

func (s *store) read() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// write stores version readVersion+1 with token; it reports whether it was accepted.
func (s *store) write(token, readVersion int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fenced && token < s.highest {
		s.rejected++
		return false
	}
	if token > s.highest {
		s.highest = token
	}
	if readVersion != s.version {
		s.violations++ // someone wrote in between: this write loses their update
	}
	s.version = readVersion + 1
	s.accepted++
	return true
}

func (s *store) counts() (accepted, rejected, violations int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.accepted, s.rejected, s.violations
}
