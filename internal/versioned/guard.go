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

// create is c.CreateStat with container parents, or, when ctx carries a guard, the
// create in a guarded transaction (a transaction cannot create parents: a missing parent
// is created first, as a container, outside it). The guarded create returns no Stat.
func create(ctx context.Context, c *framework.Client, path string, data []byte) (*framework.Stat, error) {
	g, ok := framework.GuardFrom(ctx)
	if !ok {
		_, st, err := c.CreateStat(ctx, path, data, framework.WithContainerParents())
		return st, err
	}
	op := framework.CreateOp(path, data, framework.Persistent, nil)
	_, err := c.GuardedTransaction(ctx, g, op)
	var te *framework.TxnError
	if errors.As(err, &te) && errors.Is(err, framework.ErrNoNode) && !errors.Is(err, framework.ErrUnknownOutcome) {
		// The parent is missing (the create found no parent; nothing was applied).
		parent := framework.ParentPath(path)
		_, perr := c.Create(ctx, parent, nil, framework.WithMode(framework.Container), framework.WithContainerParents())
		if perr != nil && !errors.Is(perr, framework.ErrNodeExists) {
			return nil, perr
		}
		_, err = c.GuardedTransaction(ctx, g, op)
	}
	return nil, err
}
