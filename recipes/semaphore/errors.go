package semaphore

import (
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/locks"
	"github.com/zoocurator/zoocurator/internal/sentinel"
)

var (
	// ErrNoLeases is returned by TryAcquire when no lease is free now.
	ErrNoLeases = sentinel.New("semaphore: no lease available", framework.ErrLocked)
	// ErrTooMany is returned when asking for more leases than the maximum: for a shared
	// count (NewShared), the count as read when the call starts. A count lowered while
	// the call waits does not end it (as Curator's, it waits until its context ends or
	// the count is raised again).
	ErrTooMany = sentinel.New("semaphore: more leases asked for than the maximum", framework.ErrInvalidArgument)
	// ErrAlreadyHeld is returned by the semaphore mutex when the context already carries
	// its lease: it is not re-entrant.
	ErrAlreadyHeld = sentinel.New("semaphore: mutex already held through this context (not re-entrant)", framework.ErrAlreadyHeld)
	// ErrBadCount is returned when the shared count node does not hold a 4-byte integer.
	ErrBadCount = sentinel.New("semaphore: shared count node does not hold a 4-byte integer", framework.ErrBadData)
	// ErrNotHeld is returned when releasing a lease twice.
	ErrNotHeld = locks.ErrNotHeld
	// ErrLeaseLost is returned by Release (after cleaning up) when the lease may have
	// been lost before it was released.
	ErrLeaseLost = locks.ErrLeaseLost
	// ErrReleased is the cause (context.Cause) of a lease context that ended because the
	// lease was released.
	ErrReleased = locks.ErrReleased
	// ErrNodeVanished is returned when a lease node vanished while waiting (the session
	// was lost) more often than the retry policy allows, and by AcquireN when a lease it
	// took first may have been lost while it took the others.
	ErrNodeVanished = locks.ErrNodeLost
)
