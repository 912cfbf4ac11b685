package wire

import (
	"errors"
	"math/rand/v2"
	"slices"
	"sync"
)

// HostList is the servers a Client dials (host:port each), handed out as the Java
// client's StaticHostProvider does: in a random order fixed when the list is given, one
// after the other, round after round. After a connection, the server it was made to
// comes last in the next round, and a round that reached no server is followed by a
// pause (see Client); unlike the Java client's, a list of one server is not paused on
// before its first dial after a connection ended. Names are handed out as given: the Dialer resolves them, at each
// dial, so that a name whose addresses change is followed and TLS checks each
// certificate for its name. It is safe for concurrent use.
type HostList struct {
	mu      sync.Mutex
	servers []string
	curr    int  // the index handed out last; -1 before the first
	last    int  // the index of the last connection (or the first handed out); -1 before
	fresh   bool // connected since the last next: a lone server is dialled again at once
}

// NewHostList returns a host list of servers, which must not be empty.
func NewHostList(servers []string) (*HostList, error) {
	h := &HostList{}
	if err := h.Update(servers); err != nil {
		return nil, err
	}
	return h, nil
}

// Update makes servers the list handed out from now on, in a new random order. A
// connection open now is kept: the next server comes from the new list when it ends
// (unlike the Java client's updateServerList, no connection is moved to balance the
// load).
func (h *HostList) Update(servers []string) error {
	if len(servers) == 0 {
		return errors.New("wire: no servers")
	}
	list := slices.Clone(servers)
	rand.Shuffle(len(list), func(i, j int) { list[i], list[j] = list[j], list[i] })
	h.mu.Lock()
	defer h.mu.Unlock()
	h.servers, h.curr, h.last = list, -1, -1
	return nil
}

// Servers returns the servers, sorted.
func (h *HostList) Servers() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	l := slices.Clone(h.servers)
	slices.Sort(l)
	return l
}

// Len returns the number of servers.
func (h *HostList) Len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.servers)
}

// next returns the next server to dial, and whether a whole round of dials since the
// last connection (or since the first dial) has passed without one.
func (h *HostList) next() (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.curr = (h.curr + 1) % len(h.servers)
	round := h.curr == h.last && !h.fresh
	h.fresh = false
	if h.last == -1 {
		h.last = 0
	}
	return h.servers[h.curr], round
}

// connected notes that the server handed out last was connected to.
func (h *HostList) connected() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.last, h.fresh = h.curr, true
}
