package main

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
)

// The names by which zkcurator recognises a recipe's nodes: Curator's, which the Go
// recipes share (see recipes/mutex, recipes/leader, recipes/semaphore, recipes/rwlock,
// recipes/queue). Every command that says what a path or a node is asks here.
const (
	markLock   = "lock-"    // a mutex's nodes: a lock, a LeaderSelector, a semaphore's inner lock
	markLatch  = "latch-"   // a LeaderLatch's nodes
	markLease  = "lease-"   // a semaphore's lease nodes, in its leases child
	markWrite  = "__WRIT__" // a read-write lock's writers
	markRead   = "__READ__" // and readers
	queueItem  = "queue-"   // prefix of a DistributedQueue's (and its kin's) items
	simpleItem = "qn-"      // prefix of a SimpleDistributedQueue's items
	semLeases  = "leases"   // a semaphore's children
	semLocks   = "locks"
)

// recipeKind is what a path is, as its children's names say.
type recipeKind int

const (
	notARecipe      recipeKind = iota // no children, or none a recipe's
	lockKind                          // lock- nodes: a mutex or a LeaderSelector
	latchKind                         // latch- nodes: a LeaderLatch
	rwLockKind                        // __WRIT__/__READ__ nodes
	semaphoreKind                     // a leases or locks child (each a container, deleted once empty)
	queueKind                         // queue- items
	simpleQueueKind                   // qn- items
)

// kindOf says what the path whose children are kids is.
func kindOf(kids []string) recipeKind {
	switch {
	case hasMarker(kids, markLatch):
		return latchKind
	case hasMarker(kids, markWrite) || hasMarker(kids, markRead):
		return rwLockKind
	case slices.Contains(kids, semLeases) || slices.Contains(kids, semLocks):
		return semaphoreKind
	case hasMarker(kids, markLock):
		return lockKind
	case hasPrefix(kids, queueItem):
		return queueKind
	case hasPrefix(kids, simpleItem):
		return simpleQueueKind
	}
	return notARecipe
}

// String says what a path of the kind is, as messages and tree name it.
func (k recipeKind) String() string {
	switch k {
	case lockKind:
		return "lock (lock- nodes: a mutex or a leader selector)"
	case latchKind:
		return "leader latch election (latch- nodes)"
	case rwLockKind:
		return "read-write lock (__WRIT__/__READ__ nodes)"
	case semaphoreKind:
		return "semaphore (a leases or locks child)"
	case queueKind:
		return "queue (queue- items)"
	case simpleQueueKind:
		return "simple queue (qn- items)"
	}
	return "no recipe's"
}

// noun names a path of the kind in a sentence ("a lock's nodes").
func (k recipeKind) noun() string {
	switch k {
	case lockKind:
		return "lock"
	case latchKind:
		return "leader latch election"
	case rwLockKind:
		return "read-write lock"
	case semaphoreKind:
		return "semaphore"
	case queueKind, simpleQueueKind:
		return "queue"
	}
	return "node"
}

// holdersHint is the command that lists who holds a lock-like path of the kind.
func (k recipeKind) holdersHint(path string) string {
	switch k {
	case lockKind:
		return "zkcurator lock holders " + path
	case latchKind:
		return "zkcurator leader who -v " + path
	case semaphoreKind:
		return "zkcurator semaphore holders " + path
	}
	return "zkcurator tree " + path
}

// isLockLike reports whether a path of the kind holds a lock's or an election's nodes.
func (k recipeKind) isLockLike() bool {
	return k == lockKind || k == latchKind || k == rwLockKind || k == semaphoreKind
}

// nodeRole names the recipe node that name is, a child of the node named parent; data is
// the node's data when it was read (nil otherwise): a service instance is known by its
// JSON. "" when it is no recipe's node that zkcurator knows.
func nodeRole(parent, name string, data []byte) string {
	switch {
	case strings.Contains(name, markLatch):
		return "leader latch node"
	case strings.Contains(name, markWrite):
		return "read-write lock node (writer)"
	case strings.Contains(name, markRead):
		return "read-write lock node (reader)"
	case parent == semLeases && strings.Contains(name, markLease):
		return "semaphore lease"
	case parent == semLocks && strings.Contains(name, markLock):
		return "semaphore lock node"
	case strings.Contains(name, markLock):
		return "lock node"
	case strings.HasPrefix(name, queueItem):
		return "queue item"
	case strings.HasPrefix(name, simpleItem):
		return "simple queue item"
	}
	if len(data) > 0 && data[0] == '{' {
		if i, err := discovery.Unmarshal[json.RawMessage](data); err == nil && i.ID == name {
			return "service instance of " + i.Name
		}
	}
	return ""
}

// orderChildren sorts kids, the children of the node named name, as the recipe they
// belong to orders them: a lock's, a leader latch's, a read-write lock's nodes and a
// semaphore's leases by their sequence numbers (the holder or leader first), anything
// else by name (a priority queue's items are in priority order by name).
func orderChildren(name string, kids []string) {
	slices.Sort(kids)
	switch kind := kindOf(kids); {
	case name == semLeases && hasMarker(kids, markLease):
		framework.SortBySequence(kids, markLease)
	case kind == lockKind:
		framework.SortBySequence(kids, markLock)
	case kind == latchKind:
		framework.SortBySequence(kids, markLatch)
	case kind == rwLockKind:
		slices.SortStableFunc(kids, func(a, b string) int { return strings.Compare(lastDigits(a), lastDigits(b)) })
	}
}

// lastDigits returns the 10-digit sequence number at the end of name ("" for none).
func lastDigits(name string) string {
	if len(name) < 10 || strings.IndexFunc(name[len(name)-10:], func(r rune) bool { return r < '0' || r > '9' }) >= 0 {
		return ""
	}
	return name[len(name)-10:]
}

// hasMarker reports whether a name in kids contains marker.
func hasMarker(kids []string, marker string) bool {
	return slices.ContainsFunc(kids, func(k string) bool { return strings.Contains(k, marker) })
}

// hasPrefix reports whether a name in kids starts with prefix.
func hasPrefix(kids []string, prefix string) bool {
	return slices.ContainsFunc(kids, func(k string) bool { return strings.HasPrefix(k, prefix) })
}
