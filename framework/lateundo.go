package framework

import (
	"context"
	"strconv"
	"strings"

	"github.com/go-zookeeper/zk"
)

// lateUndo undoes an unprotected sequential create that the caller gave up on while it
// was in flight, once its late reply names the node it made; and only that node: the
// name can be reused after the node is gone (the parent deleted and made again restarts
// its counter; a plain create of that name), and a delete by path would then delete
// another client's node.
//
// go-zookeeper hands back neither the reply's zxid nor (create, not create2) the node's
// Stat, so the undo is bound by a read instead: when the caller gives up, the parent's
// Stat is read on the same session. When that read saw the create (the parent's cversion
// is past the sequence number the server gave the node: the server numbers a sequential
// child by the parent's cversion, which every child create and delete raises), the create
// was applied before the read, and the node it made has a czxid no greater than the
// parent's pzxid as that read saw it: the undo deletes the node at the path only if its
// czxid is that or earlier (WithMaxCzxid), so a node made at the name after the caller
// gave up stays. When the read cannot tell (it overtook the create, the parent was gone
// or made again, the connection was lost), the undo deletes the node at the path, as it
// did before. Not covered: a node made at the name by someone else between the create
// and the caller's giving up (the create's own node deleted meanwhile).
type lateUndo struct {
	c        *Client
	parent   string        // server path of the create's parent
	answered chan struct{} // closed once the create's late answer is stored
	path     string        // the node the late create made ("" when it failed)
}

func newLateUndo(c *Client, full string) *lateUndo {
	return &lateUndo{c: c, parent: ParentPath(full), answered: make(chan struct{})}
}

// abandoned is the create's callAt abandoned function: it stores the late answer.
func (u *lateUndo) abandoned(p string, err error) {
	if err == nil {
		u.path = p
	}
	close(u.answered)
}

// gaveUp runs when the caller gave up on the create: it reads the parent on conn (behind
// the create) and, once the create's late answer came, queues the bound delete of the
// node it made. Its goroutine is a cleanup (GoCleanup): WaitGuaranteedDeletes waits for
// it.
func (u *lateUndo) gaveUp(conn zkConn) {
	u.c.GoCleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), u.c.opts.connectionTimeout)
		st, rerr := callAt(u.c, ctx, "exists", u.parent, func() (*zk.Stat, error) {
			_, st, err := conn.Exists(u.parent)
			return st, err
		}, nil)
		cancel()
		select {
		case <-u.answered:
		case <-u.c.closing:
			return
		}
		if u.path == "" {
			return // the create failed: nothing to undo
		}
		var bound int64
		if rerr == nil && st != nil {
			if n, ok := sequenceOf(u.path); ok && n >= 0 && int64(st.Cversion) > n {
				bound = st.Pzxid
			}
		}
		if bound == 0 {
			u.c.opts.logger.Debug("late create undone by its path: the read behind it could not bound it", "component", "framework", "op", "create", "path", u.path)
		}
		u.c.deleter.add(deleteJob{path: u.path, maxCzxid: bound})
	})
}

// sequenceOf returns the sequence number a server gave the sequential node at p: its
// name's last 10 digits. After the parent's counter wrapped the name ends in a '-' and 10
// digits, a negative number read here as positive: no cversion is then past it, and the
// undo falls back to the path.
func sequenceOf(p string) (int64, bool) {
	if len(p) < 10 {
		return 0, false
	}
	seq := p[len(p)-10:]
	if strings.ContainsAny(seq, "+-") {
		return 0, false
	}
	n, err := strconv.ParseInt(seq, 10, 64)
	return n, err == nil
}
