package rwlock

import (
	"context"
	"fmt"

	"github.com/zoocurator/zoocurator/framework"
)

// Guard returns a guard on the lease's node, for writes to ZooKeeper itself made while
// holding the lease (Token is for a store outside ZooKeeper). Pass it to a write with
// framework.WithGuard, or put its Op into a framework transaction: the server applies the
// write only while the node exists, so a write made after the lease was released or its
// session expired is refused (framework.ErrFenced), and a write made once Done closed is
// refused before it is sent. The first call reads the node's czxid (one request, shared
// with Token) and checks that the node is this session's; it fails with ErrLeaseLost
// otherwise.
func (l *Lease) Guard(ctx context.Context) (framework.Guard, error) {
	g, err := l.core.Guard(ctx)
	if err != nil {
		return g, fmt.Errorf("rwlock: guard of %s: %w", l.core.Held.Path, err)
	}
	return g, nil
}
