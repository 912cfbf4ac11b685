package versioned

import (
	"context"
	"errors"

	"github.com/zoocurator/zoocurator/framework"
)

// setData is c.SetData, or, when ctx carries a guard (framework.WithGuard), the same
// setData in a guarded transaction: the server applies it only while the guard's owner
// nodes exist. A refused write's error matches framework.ErrFenced; a failed setData's
// error matches the server's answer as c.SetData's does.
func setData(ctx context.Context, c *framework.Client, path string, data []byte, version int32) (*framework.Stat, error) {
	g, ok := framework.GuardFrom(ctx)
	if !ok {
		return c.SetData(ctx, path, data, version)
	}
	res, err := c.GuardedTransaction(ctx, g, framework.SetDataOp(path, data, version))
	if err != nil {
		return nil, err
	}
	return res[0].Stat, nil
}

// create is c.Create with container parents, or, when ctx carries a guard, the create
// in a guarded transaction (a transaction cannot create parents: a missing parent is
// created first in guarded transactions of its own, so that the server makes no parent
// either once the guard no longer holds; such parents are persistent nodes, not
// containers: a transaction cannot make a container). It reads no Stat: a read after
// the create could find the node already deleted (or made again by someone else), and
// fail a create that was applied.
func create(ctx context.Context, c *framework.Client, path string, data []byte) error {
	g, ok := framework.GuardFrom(ctx)
	if !ok {
		_, err := c.Create(ctx, path, data, framework.WithContainerParents())
		return err
	}
	op := framework.CreateOp(path, data, framework.Persistent, nil)
	_, err := c.GuardedTransaction(ctx, g, op)
	var te *framework.TxnError
	if errors.As(err, &te) && errors.Is(err, framework.ErrNoNode) && !errors.Is(err, framework.ErrUnknownOutcome) {
		// The parent is missing (the create found no parent; nothing was applied).
		parent := framework.ParentPath(path)
		if perr := c.GuardedEnsure(ctx, g, parent); perr != nil {
			return perr
		}
		_, err = c.GuardedTransaction(ctx, g, op)
	}
	return err
}
