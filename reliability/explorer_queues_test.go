package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// Queue operations take, consume or remove items that another client put. Their check is
// conservation: for every payload, the times it was delivered plus the times it is still
// in the queue (or the dead-letter queue) equal the times it was put less the times
// another client deleted it — more is a duplicate, less a loss, allowed only when the
// operation said the item may be gone (queue.ErrMaybeGone).

// xqueue describes a queue operation's layout: items are the children of path (and
// dead), decoded by decode.
type xqueue struct {
	path, dead string
	decode     func([]byte) ([]string, error)
}

func decodeSimple(b []byte) ([]string, error) { return []string{string(b)}, nil }

func decodeMulti(b []byte) ([]string, error) {
	items, err := queue.DecodeItems(b)
	var out []string
	for _, it := range items {
		out = append(out, string(it))
	}
	return out, err
}

// xdeliveries records what the victim was handed.
type xdeliveries struct {
	mu  sync.Mutex
	got map[string]int
}

func (d *xdeliveries) add(p string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.got == nil {
		d.got = map[string]int{}
	}
	d.got[p]++
}

func (d *xdeliveries) counts() map[string]int {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := map[string]int{}
	for k, v := range d.got {
		out[k] = v
	}
	return out
}

// conserved checks conservation once the operation is over. callErr is the operation's
// error: ErrMaybeGone allows an item fewer, ErrNotRemoved (a handled item left in the
// queue, to be delivered again: at least once) an item more.
func conserved(ctx context.Context, r *xrun, q xqueue, got map[string]int, callErr error) []string {
	mayBeGone := errors.Is(callErr, queue.ErrMaybeGone)
	mayBeAgain := errors.Is(callErr, queue.ErrNotRemoved)
	put := map[string]int{}
	isItem := func(p string) bool {
		parent := framework.ParentPath(p)
		return parent == q.path || (q.dead != "" && parent == q.dead)
	}
	for _, c := range r.advChanges() {
		if !isItem(c.path) {
			continue
		}
		items, err := q.decode(c.data)
		if err != nil {
			continue
		}
		for _, it := range items {
			if c.made {
				put[it]++
			} else {
				put[it]--
			}
		}
	}
	left := map[string]int{}
	for _, dir := range []string{q.path, q.dead} {
		if dir == "" {
			continue
		}
		kids, _, err := r.w.adv.Children(ctx, dir)
		if err != nil && !errors.Is(err, framework.ErrNoNode) {
			return []string{err.Error()}
		}
		for _, k := range kids {
			b, _, err := r.w.adv.GetData(ctx, framework.JoinPath(dir, k))
			if err != nil {
				continue
			}
			items, err := q.decode(b)
			if err != nil {
				continue
			}
			for _, it := range items {
				left[it]++
			}
		}
	}
	var out []string
	for it, n := range put {
		switch have := got[it] + left[it]; {
		case have > n && !(mayBeAgain && have == n+1):
			out = append(out, fmt.Sprintf("conservation: %q delivered %d times and left %d times, put %d times (less other clients' deletes)", it, got[it], left[it], n))
		case have < n && !mayBeGone:
			out = append(out, fmt.Sprintf("conservation: %q lost: delivered %d times and left %d times, put %d times, and no error said it may be gone", it, got[it], left[it], n))
		}
	}
	for it, n := range got {
		if _, ok := put[it]; !ok {
			out = append(out, fmt.Sprintf("conservation: %q delivered %d times, never put", it, n))
		}
	}
	return out
}

// putItems puts payloads as another client, through the recipe's own Put.
func putItems(ctx context.Context, r *xrun, put func(c *framework.Client, payload string) (string, error), payloads ...string) error {
	for _, p := range payloads {
		node, err := put(r.w.adv, p)
		if err != nil {
			return err
		}
		st, err := r.w.adv.Exists(ctx, node)
		if err != nil || st == nil {
			return fmt.Errorf("explorer: read the item just put at %s: %v", node, err)
		}
		r.recordAdv(node, st)
		b, _, err := r.w.adv.GetData(ctx, node)
		if err != nil {
			return err
		}
		r.logAdv(true, node, b)
	}
	return nil
}

func simpleTakeOp() xop {
	return xop{name: "simple-take", setup: func(ctx context.Context, r *xrun) (*xround, error) {
		q := xqueue{path: r.w.base + "/q", decode: decodeSimple}
		put := func(c *framework.Client, payload string) (string, error) {
			sq, err := queue.NewSimple(c, q.path, queue.String{})
			if err != nil {
				return "", err
			}
			return sq.Offer(ctx, payload)
		}
		if err := putItems(ctx, r, put, "one", "two"); err != nil {
			return nil, err
		}
		sq, err := queue.NewSimple(r.w.victim, q.path, queue.String{})
		if err != nil {
			return nil, err
		}
		var d xdeliveries
		var callErr error
		return &xround{
			call: func(ctx context.Context) error {
				item, err := sq.Take(ctx)
				if err == nil {
					d.add(item)
				}
				callErr = err
				return err
			},
			final: func(ctx context.Context) []string {
				return conserved(ctx, r, q, d.counts(), callErr)
			},
			mayTake: func(p string) bool { return framework.ParentPath(p) == q.path },
			target:  firstChild(r, q.path),
		}, nil
	}}
}

// firstChild targets the queue's first item while the victim has made no node.
func firstChild(r *xrun, dir string) func() string {
	return func() string {
		kids, _, err := r.w.adv.Children(r.bg, dir)
		if err != nil || len(kids) == 0 {
			return ""
		}
		first := kids[0]
		for _, k := range kids {
			if k < first {
				first = k
			}
		}
		return framework.JoinPath(dir, first)
	}
}

// consumeOp: one ConsumeOne of a Queue (with a lock path, and with a dead-letter queue
// whose handler fails, as asked) of items another client put. With second, a consumer
// on another client runs one ConsumeOne while the victim's handler runs (the handler
// waits for it): it takes what is not locked, and its deliveries count with the victim's.
func consumeOp(name string, lockPath, failing, second bool) xop {
	return xop{name: name, listeners: true, setup: func(ctx context.Context, r *xrun) (*xround, error) {
		q := xqueue{path: r.w.base + "/q", decode: decodeMulti}
		var opts []queue.Option
		if lockPath {
			opts = append(opts, queue.WithLockPath(r.w.base+"/locks"))
		}
		if failing {
			q.dead = r.w.base + "/dead"
			opts = append(opts, queue.WithLockPath(r.w.base+"/locks"), queue.WithMaxAttempts(1), queue.WithDeadLetterPath(q.dead))
		}
		put := func(c *framework.Client, payload string) (string, error) {
			aq, err := queue.New(c, q.path, queue.String{})
			if err != nil {
				return "", err
			}
			return aq.Put(ctx, payload)
		}
		if err := putItems(ctx, r, put, "one", "two"); err != nil {
			return nil, err
		}
		vq, err := queue.New(r.w.victim, q.path, queue.String{}, opts...)
		if err != nil {
			return nil, err
		}
		var d xdeliveries
		var callErr error
		var other *queue.Queue[string]
		if second {
			if other, err = queue.New(r.w.adv, q.path, queue.String{}, opts...); err != nil {
				return nil, err
			}
		}
		return &xround{
			call: func(ctx context.Context) error {
				callErr = vq.ConsumeOne(ctx, func(hctx context.Context, item string) error {
					if hctx.Err() != nil && ctx.Err() != nil {
						r.violate("handler: called with a context that had ended (%v) for %q", hctx.Err(), item)
					}
					r.listenerHook()
					if other != nil {
						octx, cancel := context.WithTimeout(r.bg, 10*time.Second)
						err := other.ConsumeOne(octx, func(_ context.Context, item string) error {
							d.add(item)
							return nil
						})
						cancel()
						r.t.Logf("the second consumer: %v", err)
					}
					if failing {
						return errors.New("explorer: the handler fails")
					}
					d.add(item)
					return nil
				})
				return callErr
			},
			final: func(ctx context.Context) []string {
				return conserved(ctx, r, q, d.counts(), callErr)
			},
			mayTake: func(p string) bool {
				return framework.ParentPath(p) == q.path || strings.HasPrefix(p, r.w.base+"/locks/")
			},
			target: firstChild(r, q.path),
		}, nil
	}}
}

// idRemoveOp: IDQueue.Remove of an id another client put twice, with a lock path.
func idRemoveOp() xop {
	return xop{name: "idqueue-remove", setup: func(ctx context.Context, r *xrun) (*xround, error) {
		q := xqueue{path: r.w.base + "/q", decode: decodeMulti}
		put := func(c *framework.Client, payload string) (string, error) {
			iq, err := queue.NewID(c, q.path, queue.String{})
			if err != nil {
				return "", err
			}
			return iq.Put(ctx, payload, "the-id")
		}
		if err := putItems(ctx, r, put, "one", "two"); err != nil {
			return nil, err
		}
		iq, err := queue.NewID(r.w.victim, q.path, queue.String{}, queue.WithLockPath(r.w.base+"/locks"))
		if err != nil {
			return nil, err
		}
		var removed int
		var callErr error
		return &xround{
			call: func(ctx context.Context) error {
				removed, callErr = iq.Remove(ctx, "the-id")
				return callErr
			},
			final: func(ctx context.Context) []string {
				// What is left and what was removed must add up to what was put.
				if callErr == nil && removed > 0 {
					kids, _, _ := r.w.adv.Children(ctx, q.path)
					left := len(kids)
					put := 0
					for _, c := range r.advChanges() {
						if framework.ParentPath(c.path) == q.path {
							if c.made {
								put++
							} else {
								put--
							}
						}
					}
					if left+removed != put {
						return []string{fmt.Sprintf("honest: Remove reported %d removed, %d are left of %d put (less other clients' deletes)", removed, left, put)}
					}
				}
				return nil
			},
			mayTake: func(p string) bool {
				return framework.ParentPath(p) == q.path || strings.HasPrefix(p, r.w.base+"/locks/")
			},
			target: firstChild(r, q.path),
		}, nil
	}}
}

// putOp: a Put by the victim is in the queue once when it reports success.
func putOp() xop {
	return xop{name: "queue-put", setup: func(ctx context.Context, r *xrun) (*xround, error) {
		q := xqueue{path: r.w.base + "/q", decode: decodeMulti}
		vq, err := queue.New(r.w.victim, q.path, queue.String{})
		if err != nil {
			return nil, err
		}
		return &xround{
			call: func(ctx context.Context) error {
				_, err := vq.Put(ctx, "mine")
				return err
			},
			after: func(ctx context.Context, err error) []string {
				kids, _, _ := r.w.adv.Children(ctx, q.path)
				n := 0
				for _, k := range kids {
					b, _, err := r.w.adv.GetData(ctx, framework.JoinPath(q.path, k))
					if items, derr := decodeMulti(b); err == nil && derr == nil && len(items) == 1 && items[0] == "mine" {
						n++
					}
				}
				switch {
				case err == nil && n > 1:
					return []string{fmt.Sprintf("honest: one Put, %d items in the queue", n)}
				case n > 1 && !errors.Is(err, queue.ErrMaybeTwice):
					return []string{fmt.Sprintf("honest: a Put that failed (%v) left %d items", err, n)}
				}
				return nil
			},
		}, nil
	}}
}

// xqueueOps are the queue operations.
var xqueueOps = []xop{
	simpleTakeOp(),
	consumeOp("queue-consume", false, false, false),
	consumeOp("queue-consume-lockpath", true, false, false),
	consumeOp("queue-consume-deadletter", true, true, false),
	consumeOp("queue-consume-lockpath-second", true, false, true),
	idRemoveOp(),
	putOp(),
}
