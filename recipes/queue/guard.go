package queue

import (
	"context"
	"errors"
	"fmt"

	"github.com/zoocurator/zoocurator/framework"
)

// createGuarded is createCounted for a ctx that carries a guard (framework.WithGuard):
// the item's create goes in one transaction with the guard's checks, so the server
// queues the item only while the guard's owner nodes exist; a refused put's error
// matches framework.ErrFenced (nothing queued). A transaction cannot create parents:
// when the queue path is missing, ensure makes it and the transaction is tried once more.
// A transaction whose answer does not say whether it was sent twice is counted as maybe
// twice when the connection was lost while it was in flight (ErrMaybeTwice with the
// path, as for an unguarded put).
func createGuarded(ctx context.Context, c *framework.Client, g framework.Guard, p string, data []byte, ensure func(context.Context) error) (string, error) {
	gen := c.Generation()
	var losses int
	lossCh := make(chan struct{}, 1)
	remove := c.AddListener(func(s framework.State) {
		if !s.IsConnected() || s == framework.Reconnected {
			select {
			case lossCh <- struct{}{}:
			default:
			}
		}
	})
	defer remove()
	op := framework.CreateOp(p, data, framework.PersistentSequential, nil)
	res, err := c.GuardedTransaction(ctx, g, op)
	var te *framework.TxnError
	if errors.As(err, &te) && errors.Is(err, framework.ErrNoNode) && !errors.Is(err, framework.ErrUnknownOutcome) {
		// The queue path is missing (nothing was applied).
		if err = ensure(ctx); err != nil {
			return "", err
		}
		res, err = c.GuardedTransaction(ctx, g, op)
	}
	if err != nil {
		return "", fmt.Errorf("queue: put: %w", err)
	}
	select {
	case <-lossCh:
		losses++
	default:
	}
	if losses > 0 || c.Generation() != gen {
		return res[0].Path, fmt.Errorf("%w (%w)", ErrMaybeTwice, framework.ErrUnknownOutcome)
	}
	return res[0].Path, nil
}
