package multilock

import (
	"context"
	"fmt"

	"github.com/zoocurator/zoocurator/framework"
)

// guarded is a part's lease that hands out guards (the leases of mutex, rwlock and
// semaphore).
type guarded interface {
	Guard(ctx context.Context) (framework.Guard, error)
}

// Guard returns a guard that holds while every lock of the multi-lease is held: the
// parts' guards joined (framework.Guard.And), so a write made under it (framework.WithGuard)
// is applied by the server only while every part's node exists, and is refused before it
// is sent once the multi-lease is released or Done closed. It needs every part's lease to
// offer Guard (the leases of mutex, rwlock and semaphore do), else it fails with
// framework.ErrInvalidArgument; it fails with ErrNotHeld once the multi-lease was released.
func (ml *MultiLease) Guard(ctx context.Context) (framework.Guard, error) {
	var all framework.Guard
	for i, p := range ml.parts {
		gp, ok := p.(guarded)
		if !ok {
			return framework.Guard{}, fmt.Errorf("multilock: guard: %w: lock %d's lease (%T) has no Guard", framework.ErrInvalidArgument, i, p)
		}
		g, err := gp.Guard(ctx)
		if err != nil {
			return framework.Guard{}, fmt.Errorf("multilock: guard: %w", err)
		}
		all = all.And(g)
	}
	own := framework.NewGuard("", 0, ml.ended)
	if own.Ended() {
		return framework.Guard{}, fmt.Errorf("multilock: guard: %w", ErrNotHeld)
	}
	return own.And(all), nil
}

// ended reports whether the multi-lease was released or Done closed.
func (ml *MultiLease) ended() bool {
	select {
	case <-ml.done:
		return true
	case <-ml.released:
		return true
	default:
		return false
	}
}
