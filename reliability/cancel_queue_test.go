package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// The cancellation fuzzer's takes that remove an item before they deliver it:
// SimpleQueue's Take, Poll and Remove, and ConsumeOne without a lock path. (ConsumeOne
// with a lock path is queue-consume-one-free.) Their checker asserts conservation, not
// only that nothing is left: takeConservation.
func init() {
	simple := func(name string, take func(q *queue.SimpleQueue[string], ctx context.Context) (string, error)) cancelOp {
		return cancelOp{name: name, setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
			qp := w.base + "/sq"
			vq, err := queue.NewSimple(w.victim, qp, queue.String{})
			if err != nil {
				return nil, err
			}
			pq, err := queue.NewSimple(w.peer, qp, queue.String{})
			if err != nil {
				return nil, err
			}
			return takeRound(ctx, w, qp,
				func(ctx context.Context, v string) (string, error) { return pq.Offer(ctx, v) },
				func(ctx context.Context) (string, error) { return take(vq, ctx) })
		}}
	}
	cancelOps = append(cancelOps,
		simple("queue-simple-take", func(q *queue.SimpleQueue[string], ctx context.Context) (string, error) {
			return q.Take(ctx)
		}),
		simple("queue-simple-poll", func(q *queue.SimpleQueue[string], ctx context.Context) (string, error) {
			it, ok, err := q.Poll(ctx)
			if err == nil && !ok {
				err = queue.ErrEmpty // the round's queue is never empty when a take starts
			}
			return it, err
		}),
		simple("queue-simple-remove", func(q *queue.SimpleQueue[string], ctx context.Context) (string, error) {
			return q.Remove(ctx)
		}),
		cancelOp{name: "queue-consume-one-nolock", setup: func(ctx context.Context, w *cancelWorld) (*opRound, error) {
			qp := w.base + "/qn"
			vq, err := queue.New(w.victim, qp, queue.String{})
			if err != nil {
				return nil, err
			}
			pq, err := queue.New(w.peer, qp, queue.String{})
			if err != nil {
				return nil, err
			}
			return takeRound(ctx, w, qp,
				func(ctx context.Context, v string) (string, error) { return pq.Put(ctx, v) },
				func(ctx context.Context) (string, error) {
					var got []string
					err := vq.ConsumeOne(ctx, func(_ context.Context, s string) error {
						got = append(got, s)
						return nil
					})
					switch {
					case len(got) > 1:
						return "", fmt.Errorf("one ConsumeOne handled %v", got)
					case len(got) == 1 && err != nil:
						return "", fmt.Errorf("ConsumeOne handled %q and returned %w", got[0], err)
					case len(got) == 1:
						return got[0], nil
					case err == nil:
						return "", errors.New("ConsumeOne returned nil and handled nothing")
					}
					return "", err
				})
		}},
	)
}

// takeRound sets up a round of a take: the peer puts one free item; the victim's take
// (cancelled, then fresh) delivers items.
func takeRound(ctx context.Context, w *cancelWorld, qp string, put func(context.Context, string) (string, error),
	take func(context.Context) (string, error)) (*opRound, error) {
	itemPath, err := put(ctx, "free")
	if err != nil {
		return nil, err
	}
	var delivered []string
	var errs []error
	exists := func(ctx context.Context, p string) (bool, error) {
		if err := w.peer.Sync(ctx, qp); err != nil {
			return false, err
		}
		st, err := w.peer.Exists(ctx, p)
		return st != nil, err
	}
	extra := false
	return &opRound{
		call: func(ctx context.Context) (func(context.Context) error, error) {
			it, err := take(ctx)
			if err == nil {
				delivered = append(delivered, it)
			}
			errs = append(errs, err)
			if len(errs) == 1 && errors.Is(err, queue.ErrMaybeGone) {
				// A reason the fuzzer's generic check does not know (it wants nil or the
				// context's error): after judges it.
				return nil, ctx.Err()
			}
			return nil, err
		},
		after: func(ctx context.Context) error {
			left, err := exists(ctx, itemPath)
			if err != nil {
				return err
			}
			return takeConservation("free", delivered, errs[0], left)
		},
		unblock: func(ctx context.Context) error {
			left, err := exists(ctx, itemPath)
			if err != nil || left {
				return err
			}
			_, err = put(ctx, "extra") // the free item is gone: one for the fresh take
			extra = true
			return err
		},
		check: func(ctx context.Context) error {
			got := map[string]int{}
			for _, d := range delivered {
				got[d]++
			}
			want := map[string]int{"free": 1}
			if extra {
				want["extra"] = 1
				if errors.Is(errs[0], queue.ErrMaybeGone) && got["free"] == 0 {
					want["free"] = 0 // gone, undelivered, and the call said it may be
				}
			}
			for k, n := range want {
				if got[k] != n {
					return fmt.Errorf("item %q delivered %d times, want %d (deliveries %v, errors %v)", k, got[k], n, delivered, errs)
				}
			}
			if len(delivered) != want["free"]+want["extra"] {
				return fmt.Errorf("deliveries %v, want %v (errors %v)", delivered, want, errs)
			}
			if err := w.peer.Sync(ctx, qp); err != nil {
				return err
			}
			kids, _, err := w.peer.Children(ctx, qp)
			if err != nil && !errors.Is(err, framework.ErrNoNode) {
				return err
			}
			if len(kids) != 0 {
				return fmt.Errorf("items left after the fresh take: %v", kids)
			}
			return nil
		},
	}, nil
}

// takeConservation judges a take that removes an item before it delivers it, once the
// call returned with err: item delivered at most once; delivered, it is gone from the
// queue; not delivered, it is still there unless err says it may be gone
// (queue.ErrMaybeGone). left says whether the item's node is still there.
func takeConservation(item string, delivered []string, err error, left bool) error {
	n := 0
	for _, d := range delivered {
		if d == item {
			n++
		}
	}
	switch {
	case n > 1:
		return fmt.Errorf("item %q delivered %d times", item, n)
	case n == 1 && left:
		return fmt.Errorf("item %q delivered and still in the queue: it will be delivered again", item)
	case n == 0 && !left && !errors.Is(err, queue.ErrMaybeGone):
		return fmt.Errorf("item %q gone, undelivered, and the call's error does not say it may be (%v)", item, err)
	}
	return nil
}

// The negative control of takeConservation: each outcome that breaks conservation is
// reported, each that keeps it is not.
func TestTakeConservationNegativeControl(t *testing.T) {
	maybe := &queue.MaybeGoneError{Path: "/q/qn-0000000000", Err: context.Canceled}
	cases := []struct {
		name      string
		delivered []string
		err       error
		left      bool
		bad       bool
	}{
		{"delivered twice", []string{"x", "x"}, nil, false, true},
		{"delivered and left", []string{"x"}, nil, true, true},
		{"lost with the context's error alone", nil, context.Canceled, false, true},
		{"lost with no error", nil, nil, false, true},
		{"delivered once", []string{"x"}, nil, false, false},
		{"left, not delivered", nil, context.Canceled, true, false},
		{"gone, said so", nil, errors.Join(maybe, context.Canceled), false, false},
		{"left, said it may be gone", nil, maybe, true, false},
	}
	for _, c := range cases {
		err := takeConservation("x", c.delivered, c.err, c.left)
		if c.bad && err == nil {
			t.Errorf("%s: not reported", c.name)
		}
		if !c.bad && err != nil {
			t.Errorf("%s: reported: %v", c.name, err)
		}
	}
}
