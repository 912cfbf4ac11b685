package locks

import (
	"context"

	"github.com/zoocurator/zoocurator/framework"
)

// Guard returns a guard on the lease's node (framework.Guard): writes made under it are
// applied by the server only while the node exists, and refused before sending once the
// lease ended on the client's side (released, or Done closed). The first call reads the
// node's czxid (one request, shared with Czxid), which also checks that the node is this
// session's; it fails with ErrLeaseLost when the lease already ended or the node is not
// ours. The node's protected name (a fresh UUID) is what makes a check by path sound:
// no other create makes a node at that path.
func (l *Lease) Guard(ctx context.Context) (framework.Guard, error) {
	z, err := l.Czxid(ctx)
	if err != nil {
		return framework.Guard{}, err
	}
	return framework.NewGuard(l.Held.Path, z, l.ended), nil
}
