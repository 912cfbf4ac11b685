package leader

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/zoocurator/zoocurator/framework"
)

// Observe reports who leads the election on path, to anyone: a follower, a dashboard, a
// process that takes no part. The returned channel gets the leader as ZooKeeper shows
// it now, then the new leader each time leadership changes hands; a Participant with
// Leader false (and no ID or Node) means that nobody takes part. The channel is closed
// when ctx ends or the client is closed.
//
// It works on a latch's path and on a selector's path alike, with Go and Curator
// participants (LeaderLatch, LeaderSelector, or an InterProcessMutex on a selector's
// path): the leader is the participant whose node is first in line, and its ID is the
// node's data, Curator's participant id. Children whose names carry neither "latch-" nor
// "lock-" are not participants.
//
// It does not poll: it keeps one watch, on the leader's node (which nobody can get ahead
// of: sequence numbers only grow), or while nobody takes part on the path's children or
// on the path itself. When the leader's node goes, it reads the children once and
// watches the new leader's node.
//
// A leader whose node this client may not read (its ACL denies READ: a Curator
// participant with an ACL provider, say) is reported by its node alone: Leader true,
// Node set, Unreadable true and ID empty (the id is the node's data, which cannot be
// read). ZooKeeper tells a watch nothing about a node its client may not read, so while
// such a node leads the one watch is on the path's children instead: any participant
// joining or leaving then makes the observer list the children again (one request),
// and it reports only a change of leader.
//
// What is not guaranteed: a value is what ZooKeeper showed when it was read, and the
// reader hears it later. Leadership can change hands more than once between two values
// (each is still the latest at the time it was read), the first in line may not have
// noticed yet that it leads, and while the client is disconnected nothing is reported.
// A reader that falls behind gets the changes late, never out of order. After ctx ends,
// the last watch stays registered on the server until its node changes or the session
// ends (ZooKeeper 3.8's client cannot remove a watch).
//
// It fails at once only for bad arguments (a nil client, an invalid path) and for a
// closed client (an error matching ErrClosed and framework.ErrClosed).
func Observe(ctx context.Context, c *framework.Client, path string) (<-chan Participant, error) {
	if c == nil {
		return nil, fmt.Errorf("leader: observe: %w: nil client", framework.ErrInvalidArgument)
	}
	if err := framework.ValidatePath(path); err != nil {
		return nil, fmt.Errorf("leader: observe: %w", err)
	}
	if path == "/" || framework.IsReservedPath(path) {
		return nil, fmt.Errorf("leader: observe: %w: %q cannot be an election path", framework.ErrInvalidArgument, path)
	}
	out := make(chan Participant)
	o := &observer{client: c, path: path, out: out}
	if !c.Go(func() { o.run(ctx) }) {
		return nil, fmt.Errorf("%w: observe %s: the client is closed", ErrClosed, path)
	}
	return out, nil
}

type observer struct {
	client *framework.Client
	path   string
	out    chan Participant
	last   Participant
	sent   bool
}

func (o *observer) run(ctx context.Context) {
	defer close(o.out)
	backoff := minBackoff
	for ctx.Err() == nil {
		cur, changed, again, err := o.next(ctx)
		if again {
			continue
		}
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, framework.ErrClosed) {
				return
			}
			o.client.Logger().Warn("observing the leader failed; trying again", "component", "leader", "path", o.path, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-o.client.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, maxBackoff)
			continue
		}
		backoff = minBackoff
		if !o.sent || cur.Node != o.last.Node {
			select {
			case o.out <- cur:
				o.last, o.sent = cur, true
			case <-ctx.Done():
				return
			case <-o.client.Done():
				return
			}
		}
		select {
		case <-changed.Done():
		case <-ctx.Done():
			return
		case <-o.client.Done():
			return
		}
	}
}

// next reads who leads now and sets the one watch that fires when that may change; again
// means "it changed while we read: look again at once". All the observer's watches are
// set here.
func (o *observer) next(ctx context.Context) (p Participant, changed *framework.Watch, again bool, err error) {
	c := o.client
	if err := c.BlockUntilConnected(ctx); err != nil {
		return Participant{}, nil, false, err
	}
	kids, _, err := c.Children(ctx, o.path)
	if errors.Is(err, framework.ErrNoNode) {
		// No election yet: wait for the path to be made.
		st, ch, err := c.ExistsW(ctx, o.path)
		if err != nil {
			return Participant{}, nil, false, err
		}
		if st != nil {
			return Participant{}, nil, true, nil // made in between: look again
		}
		return Participant{}, ch, false, nil
	}
	if err != nil {
		return Participant{}, nil, false, err
	}
	kids = contenders(kids)
	if len(kids) == 0 {
		// Nobody takes part: wait for someone to join.
		all, _, ch, err := c.ChildrenW(ctx, o.path)
		if errors.Is(err, framework.ErrNoNode) {
			return Participant{}, nil, true, nil // deleted in between: look again
		}
		if err != nil {
			return Participant{}, nil, false, err
		}
		if len(contenders(all)) > 0 {
			return Participant{}, nil, true, nil // someone joined in between: look again
		}
		return Participant{}, ch, false, nil
	}
	node := framework.JoinPath(o.path, kids[0])
	data, _, ch, err := c.GetDataW(ctx, node)
	if errors.Is(err, framework.ErrNoAuth) {
		return o.unreadable(ctx, node)
	}
	if errors.Is(err, framework.ErrNoNode) {
		return Participant{}, nil, true, nil // gone already: look again
	}
	if err != nil {
		return Participant{}, nil, false, err
	}
	p = Participant{ID: string(data), Leader: true, Node: node}
	if o.sent && o.last.Node == node {
		p = o.last // the same leader: its node's data may have changed since (a revocation request)
	}
	return p, ch, false, nil
}

// unreadable is next for a leader's node this client may not read (its ACL denies READ):
// the leader is known by its node only. Its node cannot be watched either (ZooKeeper tells
// a watch's events only to a client that may read the node: an exists watch is set, but
// never fires), so the path's children are watched, which the node's delete fires.
func (o *observer) unreadable(ctx context.Context, node string) (p Participant, changed *framework.Watch, again bool, err error) {
	all, _, ch, err := o.client.ChildrenW(ctx, o.path)
	if errors.Is(err, framework.ErrNoNode) {
		return Participant{}, nil, true, nil // deleted in between: look again
	}
	if err != nil {
		return Participant{}, nil, false, err
	}
	if kids := contenders(all); len(kids) == 0 || framework.JoinPath(o.path, kids[0]) != node {
		return Participant{}, nil, true, nil // leadership changed hands in between: look again
	}
	return Participant{Leader: true, Node: node, Unreadable: true}, ch, false, nil
}

// contenders returns the election's nodes among kids (latch or selector nodes), sorted
// in line: by the sequence after the marker.
func contenders(kids []string) []string {
	var out []string
	for _, k := range kids {
		if strings.Contains(k, latchName) || strings.Contains(k, lockName) {
			out = append(out, k)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int {
		if c := strings.Compare(inLineKey(a), inLineKey(b)); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return out
}

// inLineKey is the text after the last election marker in name: its sequence number.
func inLineKey(name string) string {
	if i := strings.LastIndex(name, latchName); i >= 0 {
		return name[i+len(latchName):]
	}
	return framework.SequenceSuffix(name, lockName)
}
