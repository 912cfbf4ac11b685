package framework

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// deleter is the guaranteed-delete worker: it keeps deleting the nodes handed to it until
// each is gone (deleted, or NoNode), or the client closes.
type deleter struct {
	c      *Client
	mu     sync.Mutex
	jobs   []deleteJob
	signal chan struct{}
	idle   chan struct{} // closed when no job is pending; replaced when one is added
	// running is true while the worker holds jobs taken from jobs; busy counts the
	// cleanups running (GoCleanup). idle is closed only when neither is pending.
	running bool
	busy    int
}

// idleLocked closes idle when no job and no cleanup is pending; d.mu must be held.
func (d *deleter) idleLocked() {
	if len(d.jobs) == 0 && !d.running && d.busy == 0 {
		closeOnce(d.idle)
	}
}

// busyLocked marks the worker not idle; d.mu must be held.
func (d *deleter) busyLocked() {
	if isClosed(d.idle) {
		d.idle = make(chan struct{})
	}
}

// deleteJob deletes a node by its server path, or (prefix != "") every child of parent
// whose name starts with prefix: what a failed protected create may have left.
type deleteJob struct {
	path   string
	parent string
	prefix string
	// children jobs delete path's descendants first (WithChildren).
	children bool
	// versioned jobs delete path only at version; BadVersion ends them.
	versioned bool
	version   int32
	// maxCzxid, when not 0, deletes path only if its node was created by that
	// transaction or an earlier one.
	maxCzxid int64
	// owner, when not 0, deletes path only as an ephemeral node of session owner (see
	// OwnedBy).
	owner int64
	// owners, for a prefix job of an ephemeral create: the sessions its attempts went
	// out on; a child is deleted only if one of them owns it (another client may have
	// made a node under the protected name). nil: any child with the prefix.
	owners []int64
	// inflight, for a prefix job: the create requests that may still make such a child;
	// the sweep lists the parent only once they were answered (a listing sent before a
	// create that has not gone out yet would find nothing, and the create land after).
	inflight *InFlight
}

func newDeleter(c *Client) *deleter {
	idle := make(chan struct{})
	close(idle)
	return &deleter{c: c, signal: make(chan struct{}, 1), idle: idle}
}

func (d *deleter) add(j deleteJob) {
	d.mu.Lock()
	d.busyLocked()
	d.jobs = append(d.jobs, j)
	d.mu.Unlock()
	select {
	case d.signal <- struct{}{}:
	default:
	}
}

func (d *deleter) run() {
	defer d.c.wg.Done()
	backoff := 50 * time.Millisecond
	for {
		d.mu.Lock()
		jobs := d.jobs
		d.jobs = nil
		d.running = len(jobs) > 0
		d.mu.Unlock()
		var failed []deleteJob
		for _, j := range jobs {
			if err := d.do(j); err != nil {
				if !connectionClass(err) {
					// It can never succeed by retrying (NotEmpty, NoAuth, ...): give up.
					d.c.opts.logger.Warn("guaranteed delete gave up", "component", "framework", "op", "delete", "path", j.path, "parent", j.parent, "err", err)
					continue
				}
				d.c.opts.logger.Debug("guaranteed delete will retry", "component", "framework", "op", "delete", "path", j.path, "parent", j.parent, "err", err)
				failed = append(failed, j)
			}
		}
		d.mu.Lock()
		d.jobs = append(failed, d.jobs...)
		d.running = false
		d.idleLocked()
		pending := len(d.jobs) > 0
		d.mu.Unlock()
		var wait <-chan time.Time
		if pending && len(failed) > 0 {
			wait = time.After(backoff)
			backoff = min(backoff*2, 2*time.Second)
		} else {
			backoff = 50 * time.Millisecond
		}
		if pending && len(failed) == 0 {
			continue
		}
		select {
		case <-d.c.closing:
			return
		case <-d.signal:
		case <-wait:
		}
	}
}

// connectionClass reports whether a failed delete may still succeed when retried:
// connection loss, an operation timeout, a moved session, or a caller's context that
// ended while the request may have been in flight. Only these go to the background
// worker (Curator's failed-delete manager does the same).
func connectionClass(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrSessionMoved) ||
		errors.Is(err, zk.ErrNoServer) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded)
}

// do runs one job once. NoNode counts as done, and so does BadVersion for a versioned job.
func (d *deleter) do(j deleteJob) error {
	ctx, cancel := context.WithTimeout(context.Background(), d.c.opts.connectionTimeout)
	defer cancel()
	if err := d.c.waitConnected(ctx); err != nil {
		return err
	}
	conn := d.c.loadConn()
	if j.prefix == "" {
		return d.deletePath(ctx, conn, j)
	}
	if j.inflight != nil {
		if err := j.inflight.Wait(ctx); err != nil {
			return err // connection-class (the deadline): tried again
		}
	}
	kids, err := call(d.c, ctx, "getChildren", func() ([]string, error) {
		k, _, err := conn.Children(j.parent)
		return k, err
	}, nil)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range kids {
		if strings.HasPrefix(k, j.prefix) {
			p := j.parent + "/" + k
			if j.parent == "/" {
				p = "/" + k
			}
			var err error
			if j.owners != nil {
				err = d.deleteOwned(ctx, conn, p, j.owners)
			} else {
				_, err = call(d.c, ctx, "delete", func() (struct{}, error) { return struct{}{}, conn.Delete(p, -1) }, nil)
			}
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
		}
	}
	return nil
}

// deletePath runs a job on one path (prefix ""): its descendants first (children), then
// the node, bound as the job says.
func (d *deleter) deletePath(ctx context.Context, conn zkConn, j deleteJob) error {
	version := int32(-1)
	if j.versioned {
		version = j.version
	}
	if j.children {
		if err := d.c.deleteChildren(ctx, conn, j.path); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err // the node's own delete was not sent
		}
	}
	var err error
	if j.maxCzxid != 0 || j.owner != 0 { // a job is a delete sent again: it reads the owner
		err = deleteCreated(d.c, ctx, conn, j.path, j.maxCzxid, j.owner, version, nil, nil)
	} else {
		_, err = call(d.c, ctx, "delete", func() (struct{}, error) { return struct{}{}, conn.Delete(j.path, version) }, nil)
	}
	if err == nil || errors.Is(err, zk.ErrNoNode) || (j.versioned && errors.Is(err, zk.ErrBadVersion)) {
		return nil
	}
	return err
}

// deleteOwned deletes the node at p, at the version read, only if one of the sessions
// owners owns it: ErrNoNode when it is gone or another's, ErrWrappedVersion (not sent)
// when the version read is -1.
func (d *deleter) deleteOwned(ctx context.Context, conn zkConn, p string, owners []int64) error {
	for {
		st, err := call(d.c, ctx, "exists", func() (*zk.Stat, error) {
			ok, st, err := conn.Exists(p)
			if err == nil && !ok {
				st = nil
			}
			return st, err
		}, nil)
		if err != nil {
			return err
		}
		if testHookStatRead != nil {
			testHookStatRead(st)
		}
		if st == nil || !slices.Contains(owners, st.EphemeralOwner) {
			return zk.ErrNoNode
		}
		v, err := ReadVersion(st)
		if err != nil {
			return err
		}
		_, err = call(d.c, ctx, "delete", func() (struct{}, error) { return struct{}{}, conn.Delete(p, v) }, nil)
		if !errors.Is(err, zk.ErrBadVersion) {
			return err
		}
	}
}

// GoCleanup runs fn on a goroutine that Close waits for (as Go does) and that
// WaitGuaranteedDeletes counts as pending until fn returns: recipes run there the cleanup
// of a call whose caller stopped waiting (its context ended), so that the call returns
// at once and a caller can still wait for what it left to be gone. It returns false,
// without running fn, once the client is closed.
func (c *Client) GoCleanup(fn func()) bool {
	d := c.deleter
	d.mu.Lock()
	d.busyLocked()
	d.busy++
	d.mu.Unlock()
	done := func() {
		d.mu.Lock()
		d.busy--
		d.idleLocked()
		d.mu.Unlock()
	}
	if !c.Go(func() { defer done(); fn() }) {
		done()
		return false
	}
	return true
}

// WaitGuaranteedDeletes waits until every guaranteed delete handed to the background
// worker so far, and every cleanup started with GoCleanup, has finished, or ctx ends.
// Tests and orderly shutdowns use it; so does a caller that gave up a lock's acquisition
// (its context ended) and must know that what it made is gone.
func (c *Client) WaitGuaranteedDeletes(ctx context.Context) error {
	c.deleter.mu.Lock()
	idle := c.deleter.idle
	c.deleter.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closing:
		return ErrClosed
	}
}
