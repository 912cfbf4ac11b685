package main

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
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
	semaphoreKind                     // leases and locks children holding a semaphore's nodes (pathKind)
	queueKind                         // queue- items
	simpleQueueKind                   // qn- items
)

// kindOf says what the path whose children are kids is, by their names alone. A path
// whose children are only leases and locks may be a semaphore (semaphoreKind): pathKind
// reads those children to tell.
func kindOf(kids []string) recipeKind {
	switch {
	case hasMarker(kids, markLatch):
		return latchKind
	case hasMarker(kids, markWrite) || hasMarker(kids, markRead):
		return rwLockKind
	case mayBeSemaphore(kids):
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
		return "semaphore (leases and locks children)"
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

// holdersHint is the command that lists who holds a lock-like path of the kind, or
// what a queue's path holds.
func (k recipeKind) holdersHint(path string) string {
	switch k {
	case lockKind:
		return "zkcurator lock holders " + path
	case latchKind:
		return "zkcurator leader who -v " + path
	case semaphoreKind:
		return "zkcurator semaphore holders " + path
	case queueKind:
		return "zkcurator queue list " + path
	case simpleQueueKind:
		return "zkcurator queue list " + path + " --kind simple"
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

// mayBeSemaphore reports whether kids, a path's children, are a semaphore's by their
// names: Curator's InterProcessSemaphoreV2 (and the Go semaphore) makes a leases and a
// locks child at its path, each a container, and nothing else.
func mayBeSemaphore(kids []string) bool {
	return len(kids) > 0 && !slices.ContainsFunc(kids, func(k string) bool { return k != semLeases && k != semLocks })
}

// The names of a semaphore's nodes: a lease node is ephemeral-sequential under a
// protected name (Curator's, and the Go semaphore's, _c_<uuid>-lease-<seq>); the inner
// mutex's nodes are lock nodes (_c_<uuid>-lock-<seq>, or lock-<seq> unprotected).
var (
	leaseNodeName = regexp.MustCompile(`^_c_[0-9a-f-]{36}-` + markLease + `[0-9]{10}$`)
	lockNodeName  = regexp.MustCompile(markLock + `[0-9]{10}$`)
)

// isSemaphore reports whether a path whose children are only leases and locks
// (mayBeSemaphore) is a semaphore, given the children of each (nil when it is not
// there): every node under leases is a lease node and every node under locks a lock
// node, and there is a lease node, or both children are there (a free semaphore whose
// containers the server has not yet deleted). A path with a locks child alone is a
// mutex's parent, not a semaphore.
func isSemaphore(leases, locks []string, hasLeases, hasLocks bool) bool {
	for _, k := range leases {
		if !leaseNodeName.MatchString(k) {
			return false
		}
	}
	for _, k := range locks {
		if !lockNodeName.MatchString(k) {
			return false
		}
	}
	return len(leases) > 0 || (hasLeases && hasLocks)
}

// childLister lists a node's children, as *framework.Client does.
type childLister interface {
	Children(ctx context.Context, path string) ([]string, *framework.Stat, error)
}

// pathKind says what path, whose children are kids, is: kindOf, and for a path that may
// be a semaphore, what its leases and locks children hold (isSemaphore). A path that is
// not a semaphore after all is notARecipe.
func pathKind(ctx context.Context, c childLister, path string, kids []string) (recipeKind, error) {
	kind := kindOf(kids)
	if kind != semaphoreKind {
		return kind, nil
	}
	var children [2][]string
	var there [2]bool
	for i, dir := range []string{semLeases, semLocks} {
		if !slices.Contains(kids, dir) {
			continue
		}
		names, _, err := c.Children(ctx, framework.JoinPath(path, dir))
		switch {
		case errors.Is(err, framework.ErrNoNode): // deleted meanwhile (an empty container)
		case err != nil:
			return notARecipe, err
		default:
			children[i], there[i] = names, true
		}
	}
	if isSemaphore(children[0], children[1], there[0], there[1]) {
		return semaphoreKind, nil
	}
	return notARecipe, nil
}

// roleOf is nodeRole of the node at path (its data, nil when not read), with a
// semaphore's nodes checked: a lease node or a lock node under leases or locks is a
// semaphore's only when the path above is a semaphore (pathKind); a lock node under a
// mutex's path named locks is a lock node. semaphoreAt says whether a path is a
// semaphore (isSemaphorePath, or a cache of it).
func roleOf(path string, data []byte, semaphoreAt func(string) bool) string {
	parent := parentOf(path)
	role := nodeRole(framework.NodeName(parent), framework.NodeName(path), data)
	switch {
	case role != "semaphore lease" && role != "semaphore lock node":
		return role
	case semaphoreAt(parentOf(parent)):
		return role
	case role == "semaphore lock node":
		return "lock node"
	}
	return ""
}

// isSemaphorePath reports whether path is a semaphore, as pathKind says from its
// children (false when they cannot be read).
func isSemaphorePath(ctx context.Context, c childLister, path string) bool {
	kids, _, err := c.Children(ctx, path)
	if err != nil {
		return false
	}
	kind, err := pathKind(ctx, c, path, kids)
	return err == nil && kind == semaphoreKind
}

// readHint says what recipe's node path is, as get can tell (role is roleOf the node,
// data its data, kind what its children make it), and the command that reads it: by
// the node's name and its parent's, by its children, or by its bytes (8 of them, not
// text: a counter's; 4: a shared count's or a 4-byte counter's). "" when nothing is
// known.
func readHint(path, role string, data []byte, kind recipeKind) (what, cmd string) {
	parent := parentOf(path)
	switch {
	case role == "queue item":
		return "a queue item", "zkcurator queue list " + parent
	case role == "simple queue item":
		return "a simple queue item", "zkcurator queue list " + parent + " --kind simple"
	case role == "lock node":
		return "a lock node (a mutex's or a leader selector's)", "zkcurator lock holders " + parent
	case role == "leader latch node":
		return "a leader latch node", "zkcurator leader who -v " + parent
	case role == "semaphore lease" || role == "semaphore lock node":
		return "a " + role, "zkcurator semaphore holders " + parentOf(parent)
	case strings.HasPrefix(role, "read-write lock node"):
		return "a " + role, "zkcurator tree " + parent
	case strings.HasPrefix(role, "service instance of "):
		cmd := "zkcurator discovery list " + strings.TrimPrefix(role, "service instance of ")
		if base := parentOf(parent); base != defaultDiscoveryBase {
			cmd += " --base " + base
		}
		return "a " + role, cmd
	case kind != notARecipe:
		return "a " + kind.String(), kind.holdersHint(path)
	case len(data) == 8 && !isText(data):
		return "8 bytes in a counter's format (Curator's DistributedAtomicLong)", "zkcurator counter get " + path
	case len(data) == 4 && !isText(data):
		return "4 bytes in a shared count's format (Curator's SharedCount; or a counter's, --int)", "zkcurator sharedcount get " + path
	}
	return "", ""
}

// plainNode refuses path, which has no children, as what (a lock, a leader election)
// when its stat shows it is a plain node: one that holds data, or an ephemeral node
// (which can have no children). Recipes make their paths without data, so a path with
// no children and no data is one nobody is in.
func plainNode(path, what string, st *framework.Stat) error {
	switch {
	case st.NumChildren > 0:
		return nil
	case st.EphemeralOwner != 0:
		return exitWith(exitError, "%s is not %s: it is an ephemeral node (it can have no children): try 'zkcurator get %s'", path, what, path)
	case st.DataLength > 0:
		return exitWith(exitError, "%s is not %s: it is a plain node holding %d bytes of data and no children: try 'zkcurator get %s'", path, what, st.DataLength, path)
	}
	return nil
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
