package framework

import (
	"context"
	"errors"

	"github.com/zoocurator/zoocurator/retry"
)

// ensureNamespace makes the namespace node (with the chroot and every missing parent, as
// persistent nodes) before the first operation under it, as Curator's namespace facade
// does: on a fresh server, listing "/" or creating "/a" then works. Once made or found
// it costs nothing more: one create per client, answered "node exists" when it was there.
// A failure that retrying may cure (a lost connection) fails this attempt of the
// operation, which the retry policy retries; any other (NoAuth, say) is logged and the
// operation goes on to report its own error, as Curator goes on; the next operation tries
// again, as Curator's facade tries until the node is made.
func (c *Client) ensureNamespace(ctx context.Context, conn zkConn) error {
	if c.opts.namespace == "" || c.nsSettled.Load() {
		return nil
	}
	err := c.ensureParents(ctx, conn, c.prefix, false)
	if err == nil {
		c.nsSettled.Store(true)
		return nil
	}
	if retry.IsRetryable(err, true) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrClosed) {
		return err
	}
	// Refused (NoAuth on a parent this client may not create in, say) while the node is
	// there: ZooKeeper checks the parent's ACL before the node's existence. Found is
	// settled, as Curator's ZKPaths.mkdirs (exists first) settles.
	if ok, _ := call(c, ctx, "exists", func() (bool, error) {
		ok, _, err := conn.Exists(c.prefix)
		return ok, err
	}, nil); ok {
		c.nsSettled.Store(true)
		return nil
	}
	c.opts.logger.Warn("cannot create the namespace node", "component", "framework", "path", c.prefix, "err", err)
	return nil
}
