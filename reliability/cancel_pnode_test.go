package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/recipes/groupmember"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
)

// The owning calls of persistentnode and groupmember: SetData and SetThisData, and a
// second instance at the node of a first on the same client (one session) that starts,
// waits for its initial create, writes and closes. Their checker is ownership: the first
// instance's node is never taken by the second (deleted by its Close, or made again by
// the first after that), whatever the cancelled call did.
func init() {
	cancelOps = append(cancelOps,
		cancelOp{name: "persistentnode-setdata", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
			p := w.base + "/pn/node"
			first, own, err := ownedNode(ctx, w, p)
			if err != nil {
				return nil, err
			}
			second, err := persistentnode.New(w.victim, p, []byte("second"))
			if err != nil {
				_ = first.Close()
				return nil, err
			}
			if err := second.Start(); err != nil {
				_ = first.Close()
				return nil, err
			}
			if err := second.WaitForInitialCreate(ctx); err != nil {
				_ = second.Close()
				_ = first.Close()
				return nil, err
			}
			return &opRound{
				call: func(ctx context.Context) (func(context.Context) error, error) {
					// Both write the node the first owns (the second keeps a node it found
					// there, as Curator does): a cancelled write leaves old or new data.
					if err := second.SetData(ctx, []byte("second-v")); err != nil {
						return nil, err
					}
					return nil, first.SetData(ctx, []byte("first-v"))
				},
				after: func(ctx context.Context) error {
					b, _, err := w.peer.GetData(ctx, p)
					if err != nil {
						return err
					}
					switch string(b) {
					case "first", "second", "second-v", "first-v":
					default:
						return fmt.Errorf("node %s holds %q, which no call wrote", p, b)
					}
					return own.check(ctx)
				},
				check: func(ctx context.Context) error {
					if err := second.Close(); err != nil {
						return fmt.Errorf("the second instance's Close: %w", err)
					}
					return own.check(ctx)
				},
				close: func() { _ = second.Close(); _ = first.Close() },
			}, nil
		}},
		cancelOp{name: "persistentnode-second-instance", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
			p := w.base + "/pn2/node"
			first, own, err := ownedNode(ctx, w, p)
			if err != nil {
				return nil, err
			}
			var seconds closers
			return &opRound{
				call: func(ctx context.Context) (func(context.Context) error, error) {
					second, err := persistentnode.New(w.victim, p, []byte("second"))
					if err != nil {
						return nil, err
					}
					if err := second.Start(); err != nil {
						return nil, err
					}
					seconds = append(seconds, second)
					err = second.WaitForInitialCreate(ctx)
					if err == nil {
						err = second.SetData(ctx, []byte("second-v"))
					}
					return nil, err
				},
				after: seconds.thenCheck(own), // (Close takes no context: it runs outside the cancelled call)
				check: seconds.thenCheck(own),
				close: func() { seconds.close(); _ = first.Close() },
			}, nil
		}},
		cancelOp{name: "groupmember-second-member", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
			g := w.base + "/group"
			first, err := groupmember.New(w.victim, g, "id", []byte("first"))
			if err != nil {
				return nil, err
			}
			if err := first.Start(ctx); err != nil {
				return nil, err
			}
			if err := first.WaitForInitialCreate(ctx); err != nil {
				_ = first.Close()
				return nil, err
			}
			own, err := newOwnership(ctx, w, g+"/id")
			if err != nil {
				_ = first.Close()
				return nil, err
			}
			var seconds closers
			return &opRound{
				call: func(ctx context.Context) (func(context.Context) error, error) {
					second, err := groupmember.New(w.victim, g, "id", []byte("second"))
					if err != nil {
						return nil, err
					}
					seconds = append(seconds, second)
					err = second.Start(ctx)
					if err == nil {
						err = second.WaitForInitialCreate(ctx)
					}
					if err == nil {
						err = second.SetThisData(ctx, []byte("second-v"))
					}
					return nil, err
				},
				after: seconds.thenCheck(own),
				check: seconds.thenCheck(own),
				close: func() { seconds.close(); _ = first.Close() },
			}, nil
		}},
	)
}

// closers are the second instances a round made: closed (each once) before the
// ownership check, since Close takes no context and is not the cancelled call.
type closers []interface{ Close() error }

func (cs *closers) close() error {
	var errs []error
	for _, c := range *cs {
		errs = append(errs, c.Close())
	}
	*cs = nil
	return errors.Join(errs...)
}

// thenCheck closes the second instances, then checks the first's ownership.
func (cs *closers) thenCheck(own *ownership) func(context.Context) error {
	return func(ctx context.Context) error {
		if err := cs.close(); err != nil {
			return fmt.Errorf("a second instance's Close: %w", err)
		}
		return own.check(ctx)
	}
}

// ownedNode starts the first instance, an ephemeral Node at p on the victim, and returns
// it with the ownership checker of its node.
func ownedNode(ctx context.Context, w *cancelWorld, p string) (*persistentnode.Node, *ownership, error) {
	first, err := persistentnode.New(w.victim, p, []byte("first"))
	if err != nil {
		return nil, nil, err
	}
	if err := first.Start(); err != nil {
		return nil, nil, err
	}
	if err := first.WaitForInitialCreate(ctx); err != nil {
		_ = first.Close()
		return nil, nil, err
	}
	own, err := newOwnership(ctx, w, p)
	if err != nil {
		_ = first.Close()
		return nil, nil, err
	}
	return first, own, nil
}

// ownership checks that one instance's node is owned by it alone: the node made at
// setup is still there, the same node (its czxid), while the victim's session lasts. A
// second instance that took it would have deleted it at Close (and the first made it
// again: another czxid), or left it gone.
type ownership struct {
	w       *cancelWorld
	path    string
	czxid   int64
	session int64
}

func newOwnership(ctx context.Context, w *cancelWorld, p string) (*ownership, error) {
	if err := w.peer.Sync(ctx, p); err != nil {
		return nil, err
	}
	st, err := w.peer.Exists(ctx, p)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return nil, fmt.Errorf("the first instance's node %s is not there after its initial create", p)
	}
	return &ownership{w: w, path: p, czxid: st.Czxid, session: w.victim.SessionID()}, nil
}

func (o *ownership) check(ctx context.Context) error {
	// A session that expired under a fault is known only once the victim is back.
	if err := o.w.victim.BlockUntilConnected(ctx); err != nil {
		return err
	}
	if s := o.w.victim.SessionID(); s != o.session {
		// The session expired (a fault): its node went with it and was made again.
		o.w.t.Logf("the victim's session changed (0x%x -> 0x%x): ownership not checked", o.session, s)
		return nil
	}
	if err := o.w.peer.Sync(ctx, o.path); err != nil {
		return err
	}
	st, err := o.w.peer.Exists(ctx, o.path)
	if err != nil {
		return err
	}
	if st == nil {
		return fmt.Errorf("the first instance's node %s is gone: another instance deleted it", o.path)
	}
	if st.Czxid != o.czxid {
		return fmt.Errorf("the first instance's node %s was deleted and made again (czxid 0x%x, was 0x%x): another instance took it", o.path, st.Czxid, o.czxid)
	}
	return nil
}

// The negative control of the ownership checker: the node deleted (as a second instance's
// Close must not do) and made again by its Node, the checker fails; left
// alone, it passes.
func TestOwnershipCheckerControl(t *testing.T) {
	healthy(t)
	w := newCancelWorld(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	first, own, err := ownedNode(ctx, w, w.base+"/control/node")
	require.NoError(t, err)
	defer first.Close()
	require.NoError(t, own.check(ctx), "nothing happened")
	made := make(chan struct{}, 1)
	first.AddListener(func(persistentnode.Created) { made <- struct{}{} })
	require.NoError(t, w.victim.Delete(ctx, own.path))
	select {
	case <-made:
	case <-ctx.Done():
		t.Fatal("the node was not made again")
	}
	require.Error(t, own.check(ctx), "the node was deleted and made again")
	require.NoError(t, first.Close())
	require.Error(t, own.check(ctx), "the node is gone")
}
