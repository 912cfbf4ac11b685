package mutex

import (
	"errors"

	"github.com/zoocurator/zoocurator/internal/locks"
)

var (
	// ErrLocked is returned by TryAcquire when another holder has the lock.
	ErrLocked = errors.New("mutex: locked by another holder")
	// ErrAlreadyHeld is returned by Acquire and TryAcquire when the context carries a live
	// lease of the same Mutex (Lease.Context): a context travels to every goroutine it is
	// given to, so it does not let anyone in. Re-enter through the lease (Lease.Reenter).
	ErrAlreadyHeld = errors.New("mutex: already held through the lease this context carries (re-enter with Lease.Reenter)")
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
