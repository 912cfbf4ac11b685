package leader

import (
	"context"
	"fmt"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/mutex"
)

// Guard returns a guard on the term's latch node, for writes to ZooKeeper itself made as
// leader (Token is for a store outside ZooKeeper). Pass it to a write with
// framework.WithGuard, or put its Op into a framework transaction: the server applies the
// write only while the latch node exists, so a write made after leadership was given up
// or the session expired is refused (framework.ErrFenced), and a write made once the term
// ended (Done closed) is refused before it is sent. It needs no request; it fails with
// ErrLeadershipLost once the term has ended.
//
// A latch that keeps its node through a brief disconnection starts a new term on the same
// node: nobody else led in between, and the server passes both terms' writes; the ended
// term's guard refuses before sending.
func (t *Term) Guard() (framework.Guard, error) {
	if isClosed(t.done) {
		return framework.Guard{}, fmt.Errorf("%w: %s", ErrLeadershipLost, t.node)
	}
	return framework.NewGuard(t.node, t.czxid, func() bool { return isClosed(t.done) }), nil
}

// SelectorGuard returns a guard on the leadership that ctx — the context a Selector gives
// its function, or one derived from it — belongs to: the lock node's guard (see
// mutex.Lease.Guard). The first call reads the node's czxid (one request). It fails with
// ErrNotLeader for a context that carries no leadership, and with ErrLeadershipLost once
// the leadership may be lost.
func SelectorGuard(ctx context.Context) (framework.Guard, error) {
	lease, ok := ctx.Value(termKey{}).(*mutex.Lease)
	if !ok {
		return framework.Guard{}, ErrNotLeader
	}
	g, err := lease.Guard(ctx)
	if err != nil {
		return g, fmt.Errorf("leader: guard: %w: %w", ErrLeadershipLost, err)
	}
	return g, nil
}
