package rwlock

import (
	"errors"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/locks"
	"github.com/zoocurator/zoocurator/internal/sentinel"
)

var (
	// ErrLocked is returned by TryAcquire when the lock cannot be had at once.
	ErrLocked = sentinel.New("rwlock: locked", framework.ErrLocked)
	// ErrUpgrade is returned when a read holder asks for the write lock: that would
	// deadlock (Curator refuses it too).
	ErrUpgrade = errors.New("rwlock: cannot upgrade a read lock to a write lock")
	// ErrAlreadyHeld is returned by Acquire and TryAcquire when the context carries a live
	// lease of the same RWLock that would make this a re-entry or a downgrade: a context
	// reaches every goroutine it is handed to, so it does not let anyone in. Use
	// Lease.Reenter or Lease.Downgrade.
	ErrAlreadyHeld = sentinel.New("rwlock: already held through the lease this context carries (use Lease.Reenter or Lease.Downgrade)", framework.ErrAlreadyHeld)
	// ErrNotHeld is returned when releasing a lease that is already fully released.
	ErrNotHeld = locks.ErrNotHeld
	// ErrLeaseLost is returned by Release (after cleaning up) when the lease may have
	// been lost before it was released.
	ErrLeaseLost = locks.ErrLeaseLost
	// ErrReleased is the cause (context.Cause) of a lease context that ended because the
	// lease was released.
	ErrReleased = locks.ErrReleased
)
