package persistentnode

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/zoocurator/zoocurator/framework"
)

// setDataGuarded is SetData for a ctx that carries a guard (framework.WithGuard), called
// holding the write lock, with path the node's current path ("" before its first
// creation). The write goes in one transaction with the guard's checks, bound to the
// node as writeData says. Only a write the server applied becomes the data the node is
// (re)created with: a refused one (framework.ErrFenced), one that found no node of this
// Node's (framework.ErrNoNode), or one whose
// outcome is unknown changes nothing the Node writes later, so no data refused by the
// guard is written afterwards without it.
func (n *Node) setDataGuarded(ctx context.Context, g framework.Guard, path string, data []byte) error {
	if path == "" {
		return fmt.Errorf("persistentnode: guarded set data of %s: not created yet: %w", n.base, framework.ErrNoNode)
	}
	data = bytes.Clone(data)
	err := n.writeData(ctx, path, func(v int32) (*framework.Stat, error) {
		res, err := n.client.GuardedTransaction(ctx, g, framework.SetDataOp(path, data, v))
		if err != nil {
			return nil, err
		}
		return res[0].Stat, nil
	})
	if err != nil {
		if errors.Is(err, framework.ErrNoNode) && !errors.Is(err, framework.ErrFenced) {
			n.poke() // the loop creates it again, with the data last written
		}
		return fmt.Errorf("persistentnode: guarded set data of %s: %w", path, err)
	}
	n.mu.Lock()
	n.data = data
	n.dataGen++
	n.mu.Unlock()
	return nil
}
