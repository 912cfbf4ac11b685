package mutex

import (
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/locks"
	"github.com/zoocurator/zoocurator/internal/sentinel"
)

var (
	// ErrLocked is returned by TryAcquire when another holder has the lock.
	ErrLocked = sentinel.New("mutex: locked by another holder", framework.ErrLocked)
	// ErrAlreadyHeld is returned by Acquire and TryAcquire when the context carries a live
	// lease of the same Mutex (Lease.Context): a context travels to every goroutine it is
	// given to, so it does not let anyone in. Re-enter through the lease (Lease.Reenter).
	ErrAlreadyHeld = sentinel.New("mutex: already held through the lease this context carries (re-enter with Lease.Reenter)", framework.ErrAlreadyHeld)
	// ErrNotHeld is returned when releasing a lease that is already fully released.
	ErrNotHeld = locks.ErrNotHeld
	// ErrLeaseLost is returned by Release (after cleaning up) and by a re-entrant Acquire
	// when the lease may have been lost before it was released.
	ErrLeaseLost = locks.ErrLeaseLost
	// ErrReleased is the cause (context.Cause) of a lease context that ended because the
	// lease was released.
	ErrReleased = locks.ErrReleased
	// ErrNodeVanished is returned when the lock node vanished while waiting (the session
	// was lost) more often than the client's retry policy allows.
	ErrNodeVanished = locks.ErrNodeLost
)
