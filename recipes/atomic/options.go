package atomic

import (
	"time"

	"github.com/zoocurator/zoocurator/retry"
)

// Option configures a counter or value.
type Option func(*options)

type options struct {
	policy      retry.Policy
	promoted    bool // WithPromotedToLock was given, lockPath the lock's path
	lockPath    string
	lockPolicy  retry.Policy
	maxLockWait time.Duration
}

// WithRetryPolicy sets the policy that decides how many optimistic tries a change gets
// and how long to sleep between them. The default is retry.Default(). A nil policy keeps
// the default.
func WithRetryPolicy(p retry.Policy) Option {
	return func(o *options) {
		if p != nil {
			o.policy = p
		}
	}
}

// WithPromotedToLock makes a change that the optimistic tries did not get through try
// again while holding a mutex at lockPath, retried under p (nil: retry.Default()), as
// Curator's PromotedToLock. maxWait bounds the wait for the lock (0: only the context
// does); a change that did not get the lock in time fails (Succeeded false, nil error).
// lockPath must be neither the counter's path nor below it: the lock's parents are
// created as containers, so a counter node they made would be a container, deleted by the
// server with its value once the lock's nodes are gone. The constructors refuse such a
// path, and one that is not a valid path (the empty one too: it does not stand for "no
// promotion"), with an error matching framework.ErrInvalidArgument. The default is no
// promotion.
func WithPromotedToLock(lockPath string, p retry.Policy, maxWait time.Duration) Option {
	return func(o *options) {
		o.promoted = true
		o.lockPath, o.lockPolicy, o.maxLockWait = lockPath, p, maxWait
	}
}
