package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// The blocking calls of the recipes that came after the fuzzer: the queue's Put and
// ConsumeOne, and service discovery's Register.
func init() {
	cancelOps = append(cancelOps,
		cancelOp{name: "queue-put", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
			// A cancelled put's outcome is unknown (the item may be queued); whatever it
			// queued, the queue's items are the victim's puts only and each is whole.
			qp := w.base + "/qp"
			vq, err := queue.New(w.victim, qp, queue.String{})
			if err != nil {
				return nil, err
			}
			var put []string // the nodes of the puts that returned without an error
			return &opRound{
				call: func(ctx context.Context) (func(context.Context) error, error) {
					p, err := vq.Put(ctx, "v")
					if err == nil {
						put = append(put, p)
					}
					return nil, err
				},
				check: func(ctx context.Context) error {
					// The peer may be on another member than the victim's puts went to.
					if err := w.peer.Sync(ctx, qp); err != nil {
						return err
					}
					kids, _, err := w.peer.Children(ctx, qp)
					if err != nil {
						return err
					}
					for _, p := range put {
						if !slices.Contains(kids, p[strings.LastIndexByte(p, '/')+1:]) {
							return fmt.Errorf("the put that returned %s without an error left no such item: %v", p, kids)
						}
					}
					if len(kids) < 1 || len(kids) > 3 { // the fresh put, and the cancelled one's (perhaps sent twice)
						return fmt.Errorf("queue %s holds %d items after one put and one cancelled put: %v", qp, len(kids), kids)
					}
					for _, k := range kids {
						data, _, err := w.peer.GetData(ctx, qp+"/"+k)
						if err != nil {
							return err
						}
						items, err := queue.DecodeItems(data)
						if err != nil || len(items) != 1 || string(items[0]) != "v" {
							return fmt.Errorf("item %s holds %q (%v)", k, data, err)
						}
					}
					return nil
				},
			}, nil
		}},
		cancelOp{name: "queue-consume-one", blocks: true, setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
			// The victim waits on an empty queue (with a lock path) until the peer puts an
			// item; the peer holds an item of its own meanwhile, whose lock node the victim
			// must leave alone.
			qp, lp := w.base+"/qc", w.base+"/qcl"
			vq, err := queue.New(w.victim, qp, queue.String{}, queue.WithLockPath(lp))
			if err != nil {
				return nil, err
			}
			pq, err := queue.New(w.peer, qp, queue.String{}, queue.WithLockPath(lp))
			if err != nil {
				return nil, err
			}
			held, err := pq.Put(ctx, "peer")
			if err != nil {
				return nil, err
			}
			holding, release := make(chan struct{}), make(chan struct{})
			peerDone := make(chan error, 1)
			pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
			go func() {
				peerDone <- pq.ConsumeOne(pctx, func(context.Context, string) error {
					close(holding)
					<-release
					return nil
				})
			}()
			select {
			case <-holding:
			case err := <-peerDone:
				pcancel()
				return nil, fmt.Errorf("the peer's consumer ended before it held its item: %w", err)
			case <-ctx.Done():
				pcancel()
				return nil, ctx.Err()
			}
			lockNode := lp + "/" + held[strings.LastIndexByte(held, '/')+1:]
			var got []string
			stopped := false
			return &opRound{
				sentinels: []string{lockNode},
				call: func(ctx context.Context) (func(context.Context) error, error) {
					err := vq.ConsumeOne(ctx, func(_ context.Context, s string) error {
						got = append(got, s)
						return nil
					})
					return nil, err
				},
				after: func(ctx context.Context) error {
					if len(got) != 0 {
						return fmt.Errorf("the cancelled ConsumeOne handled %v on a queue with no free item", got)
					}
					return nil
				},
				unblock: func(ctx context.Context) error {
					_, err := pq.Put(ctx, "for-the-victim")
					return err
				},
				check: func(ctx context.Context) error {
					if len(got) != 1 || got[0] != "for-the-victim" {
						return fmt.Errorf("the victim's ConsumeOne calls handled %v, want the one item put for it", got)
					}
					close(release)
					stopped = true
					err := <-peerDone
					pcancel()
					if err != nil && !errors.Is(err, queue.ErrNotRemoved) { // its lock node went as a sentinel
						return fmt.Errorf("the peer's consumer: %w", err)
					}
					return nil
				},
				close: func() {
					if !stopped {
						close(release)
						<-peerDone
					}
					pcancel()
				},
			}, nil
		}},
		cancelOp{name: "queue-consume-one-free", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
			// A free item is there: the cancelled ConsumeOne (with a lock path) may be cut
			// at its lock create, its read, its handler or its removal. Either it did not
			// handle the item, and the item is still there; or it handled it, and the item
			// is gone unless its error says ErrNotRemoved (then it is delivered again; it
			// may also be gone then: a removal whose reply was held past the clean-up
			// timeout has an unknown outcome).
			qp, lp := w.base+"/qf", w.base+"/qfl"
			vq, err := queue.New(w.victim, qp, queue.String{}, queue.WithLockPath(lp))
			if err != nil {
				return nil, err
			}
			if _, err := vq.Put(ctx, "free"); err != nil {
				return nil, err
			}
			var got []string
			var errs []error
			items := func(ctx context.Context) ([]string, error) {
				if err := w.peer.Sync(ctx, qp); err != nil {
					return nil, err
				}
				kids, _, err := w.peer.Children(ctx, qp)
				return kids, err
			}
			return &opRound{
				call: func(ctx context.Context) (func(context.Context) error, error) {
					err := vq.ConsumeOne(ctx, func(_ context.Context, s string) error {
						got = append(got, s)
						return nil
					})
					errs = append(errs, err)
					return nil, err
				},
				after: func(ctx context.Context) error {
					left, err := items(ctx)
					if err != nil {
						return err
					}
					switch {
					case len(got) > 1:
						return fmt.Errorf("the cancelled ConsumeOne handled %v", got)
					case len(got) == 0 && len(left) == 0:
						return fmt.Errorf("the item is gone though the cancelled ConsumeOne did not handle it (%v)", errs[0])
					case len(got) == 1 && len(left) != 0 && !errors.Is(errs[0], queue.ErrNotRemoved):
						return fmt.Errorf("the cancelled ConsumeOne handled the item and left it %v without saying ErrNotRemoved (%v): delivered twice unannounced", left, errs[0])
					}
					return nil
				},
				unblock: func(ctx context.Context) error {
					left, err := items(ctx)
					if err != nil || len(left) != 0 {
						return err
					}
					_, err = vq.Put(ctx, "extra") // the cancelled call took the item: one for the fresh call
					return err
				},
				check: func(ctx context.Context) error {
					want := 2
					if len(got) == 1 { // the cancelled call did not handle it: the fresh call did
						want = 1
					}
					if len(got) != want || got[0] != "free" {
						return fmt.Errorf("the ConsumeOne calls handled %v", got)
					}
					left, err := items(ctx)
					if err != nil {
						return err
					}
					if len(left) != 0 {
						return fmt.Errorf("items left after the fresh ConsumeOne: %v", left)
					}
					locks, _, err := w.peer.Children(ctx, lp)
					if err != nil && !errors.Is(err, framework.ErrNoNode) {
						return err
					}
					if len(locks) != 0 {
						return fmt.Errorf("lock nodes left: %v", locks)
					}
					return nil
				},
			}, nil
		}},
		cancelOp{name: "discovery-register", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
			// A cancelled Register leaves no node of its own (its Dynamic node is
			// ephemeral: checkNothingLeft sees one left) and the peer's instance of the
			// same service alone; registering again with a fresh context works.
			base := w.base + "/disc"
			pd, err := discovery.New[string](w.peer, base)
			if err != nil {
				return nil, err
			}
			pi, err := discovery.NewInstance("svc", "peer", discovery.WithID("peer"), discovery.WithAddress("10.0.0.2"), discovery.WithPort(2))
			if err != nil {
				return nil, err
			}
			if err := pd.Register(ctx, pi); err != nil {
				return nil, err
			}
			vd, err := discovery.New[string](w.victim, base)
			if err != nil {
				return nil, err
			}
			vi, err := discovery.NewInstance("svc", "victim", discovery.WithID("victim"), discovery.WithAddress("10.0.0.1"), discovery.WithPort(1))
			if err != nil {
				return nil, err
			}
			// The peer's node is checked in after (not as a sentinel, which the round
			// deletes raw: the peer's registry would then make it again).
			return &opRound{
				call: func(ctx context.Context) (func(context.Context) error, error) {
					if err := vd.Register(ctx, vi); err != nil {
						return nil, err
					}
					return func(ctx context.Context) error { return vd.Unregister(ctx, vi) }, nil
				},
				after: func(ctx context.Context) error {
					st, err := w.peer.Exists(ctx, base+"/svc/victim")
					if err != nil {
						return err
					}
					if st != nil && st.EphemeralOwner == w.victim.SessionID() {
						return fmt.Errorf("the cancelled Register left its node %s/svc/victim", base)
					}
					st, err = w.peer.Exists(ctx, base+"/svc/peer")
					if err != nil {
						return err
					}
					if st == nil || st.EphemeralOwner != w.peer.SessionID() {
						return fmt.Errorf("the peer's instance %s/svc/peer is gone after the victim's cancelled Register", base)
					}
					return nil
				},
				close: func() {
					_ = vd.Close()
					_ = pd.Close()
				},
			}, nil
		}},
		cancelOp{name: "discovery-register-replace", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
			// The victim's id is taken by another session's ephemeral node (an expired
			// session of the same instance, say): Register deletes it and makes its own,
			// as Curator does. Cancelled anywhere on that way, it leaves no node of its
			// own. The stale node may or may not be gone; the fresh call replaces it.
			base := w.base + "/disc"
			vi, err := discovery.NewInstance("svc", "victim", discovery.WithID("victim"), discovery.WithAddress("10.0.0.1"), discovery.WithPort(1))
			if err != nil {
				return nil, err
			}
			if _, err := w.peer.Create(ctx, base+"/svc/victim", []byte("{}"), framework.WithMode(framework.Ephemeral), framework.WithParents()); err != nil {
				return nil, err
			}
			vd, err := discovery.New[string](w.victim, base)
			if err != nil {
				return nil, err
			}
			return &opRound{
				call: func(ctx context.Context) (func(context.Context) error, error) {
					if err := vd.Register(ctx, vi); err != nil {
						return nil, err
					}
					return func(ctx context.Context) error { return vd.Unregister(ctx, vi) }, nil
				},
				after: func(ctx context.Context) error {
					st, err := w.peer.Exists(ctx, base+"/svc/victim")
					if err != nil {
						return err
					}
					if st != nil && st.EphemeralOwner == w.victim.SessionID() {
						return fmt.Errorf("the cancelled Register left its node %s/svc/victim", base)
					}
					return nil
				},
				check: func(ctx context.Context) error {
					// The peer may be on another member than the victim's writes went to.
					if err := w.peer.Sync(ctx, base); err != nil {
						return err
					}
					st, err := w.peer.Exists(ctx, base+"/svc/victim")
					if err != nil {
						return err
					}
					if st != nil {
						return fmt.Errorf("%s/svc/victim is there after the fresh Register replaced the stale node and was unregistered (owner 0x%x; victim 0x%x, peer 0x%x)", base, st.EphemeralOwner, w.victim.SessionID(), w.peer.SessionID())
					}
					return nil
				},
				close: func() { _ = vd.Close() },
			}, nil
		}},
	)
}
