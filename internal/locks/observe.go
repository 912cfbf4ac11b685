package locks

import (
	"strings"
	"time"

	"github.com/zoocurator/zoocurator/framework"
)

// recipeOf names the recipe a lock node belongs to, from the marker in its name, and
// the recipe's path, for the client's lock observer: a semaphore's lease node
// <path>/leases/_c_…-lease-N belongs to the semaphore at <path>.
func recipeOf(node string) (recipe, path string) {
	name, parent := framework.NodeName(node), framework.ParentPath(node)
	switch {
	case strings.Contains(name, "-lease-") && framework.NodeName(parent) == "leases":
		return "semaphore", framework.ParentPath(parent)
	case strings.Contains(name, "__WRIT__"):
		return "rwlock-write", parent
	case strings.Contains(name, "__READ__"):
		return "rwlock-read", parent
	}
	return "mutex", parent
}

// recipeOfConfig names the recipe of a lock Config (see recipeOf).
func recipeOfConfig(cfg Config) string {
	switch cfg.LockName {
	case "__WRIT__":
		return "rwlock-write"
	case "__READ__":
		return "rwlock-read"
	}
	return "mutex"
}

// observeWait tells the client's lock observer about an acquisition of l begun at start.
// The semaphore's inner lock is not reported: the semaphore reports its own wait.
func (l *Internals) observeWait(start time.Time, err error) {
	if l.cfg.Unobserved {
		return
	}
	ObserveWait(l.cfg.Client, recipeOfConfig(l.cfg), l.cfg.Path, start, err)
}

// ObserveWait tells the client's lock observer (framework.WithLockObserver) about an
// acquisition by recipe of the lock at path begun at start, which ended with err.
func ObserveWait(c *framework.Client, recipe, path string, start time.Time, err error) {
	if !c.ObservesLocks() {
		return
	}
	info := framework.LockInfo{Event: framework.LockAcquired, Recipe: recipe, Path: path, Duration: time.Since(start)}
	if err != nil {
		info.Event, info.Err = framework.LockFailed, err
	}
	c.ObserveLock(info)
}

// observeHold tells the client's lock observer that the lease was released for the last
// time, and how long it was held.
func (l *Lease) observeHold() {
	if !l.client.ObservesLocks() {
		return
	}
	recipe, path := recipeOf(l.Held.Path)
	l.client.ObserveLock(framework.LockInfo{Event: framework.LockReleased, Recipe: recipe, Path: path, Duration: time.Since(l.since)})
}
