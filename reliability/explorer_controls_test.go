package reliability_test

import (
	"context"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// The explorer's checkers, each shown catching a deliberately broken operation (run
// through the same machinery as the real ones) or a broken record.

// violationsOf runs op with move at k and returns what the checkers found.
func violationsOf(t *testing.T, op xop, move string, k int) []string {
	leakcheck.Check(t)
	var m xmove
	if move == "none" {
		m = xmove{name: "none", apply: func(*xrun) {}}
	} else {
		_, m, _ = parseRun(t, "mutex-acquire/"+move+"/k1")
	}
	r := newRun(t, &op, m, k)
	r.execute()
	return r.violations
}

func requireViolation(t *testing.T, violations []string, prefix string) {
	t.Helper()
	for _, v := range violations {
		if strings.HasPrefix(v, prefix) {
			t.Logf("caught: %s", v)
			return
		}
	}
	t.Errorf("no %q violation; found: %q", prefix, violations)
}

func TestExplorerCheckersNegativeControl(t *testing.T) {
	healthy(t)
	t.Run("tool", func(t *testing.T) {
		// A tool that exits long after its signal and leaves its command running: its
		// command is a sleep in a process group of its own.
		cmd := exec.Command("sleep", "60")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		require.NoError(t, cmd.Start())
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		exited := make(chan struct{})
		close(exited)
		tr := &xtoolRun{exited: exited, at: time.Now()}
		r := &xrun{t: t, bg: context.Background(), move: xmove{name: "sigterm", process: true},
			movedAt: tr.at.Add(-(xToolGrace + xPrompt + time.Second))}
		v := checkTool(r, tr, cmd.Process.Pid)
		requireViolation(t, v, "promptness: zkcurator exited")
		requireViolation(t, v, "cleanliness: processes of zkcurator's command left")
	})
	t.Run("ownership", func(t *testing.T) {
		// A Close that deletes its node by path, whoever made the node there.
		op := xop{name: "broken-delete-by-path", setup: func(ctx context.Context, r *xrun) (*xround, error) {
			p := r.w.base + "/n"
			return &xround{
				call: func(ctx context.Context) error {
					_, err := r.w.victim.Create(ctx, p, []byte("mine"), framework.WithMode(framework.Ephemeral))
					return err
				},
				undo: func(ctx context.Context) error { return r.w.victim.Delete(ctx, p) },
			}, nil
		}}
		requireViolation(t, violationsOf(t, op, "remade-same", 2), "ownership:")
	})
	t.Run("promptness", func(t *testing.T) {
		// A call that goes on long after its context ended.
		op := xop{name: "broken-ignores-ctx", setup: func(ctx context.Context, r *xrun) (*xround, error) {
			return &xround{call: func(ctx context.Context) error {
				_, err := r.w.victim.Exists(ctx, r.w.base) // held until ctx ends
				time.Sleep(xPrompt + time.Second)
				return err
			}}, nil
		}}
		requireViolation(t, violationsOf(t, op, "held-ctx", 1), "promptness:")
	})
	t.Run("cleanliness", func(t *testing.T) {
		// An undo that leaves an ephemeral node, a protected node and a watch behind.
		op := xop{name: "broken-leaves-nodes", setup: func(ctx context.Context, r *xrun) (*xround, error) {
			return &xround{call: func(ctx context.Context) error {
				if _, err := r.w.victim.Create(ctx, r.w.base+"/e", nil, framework.WithMode(framework.Ephemeral)); err != nil {
					return err
				}
				if _, err := r.w.victim.Create(ctx, r.w.base+"/p-", nil, framework.WithProtection(), framework.WithMode(framework.PersistentSequential)); err != nil {
					return err
				}
				_, _, err := r.w.victim.ExistsW(ctx, r.w.base+"/absent")
				return err
			}}, nil
		}}
		v := violationsOf(t, op, "none", 0)
		requireViolation(t, v, "cleanliness: the victim's ephemeral nodes left")
		requireViolation(t, v, "cleanliness: the victim's protected node")
		requireViolation(t, v, "cleanliness: the victim's watches left")
	})
	t.Run("exclusion", func(t *testing.T) {
		// A lock that says held without looking.
		fake := func(c *framework.Client, path string) (acquire, try func(context.Context) (xlease, error), err error) {
			_, try, err = mutexLocker(c, path)
			return func(ctx context.Context) (xlease, error) { return fakeLease{}, nil }, try, err
		}
		op := lockOp("broken-fake-lock", fake)
		requireViolation(t, violationsOf(t, op, "none", 0), "exclusion:")
	})
	t.Run("conservation", func(t *testing.T) {
		// A take that hands the item out and leaves it in the queue.
		op := xop{name: "broken-peek-as-take", setup: func(ctx context.Context, r *xrun) (*xround, error) {
			q := xqueue{path: r.w.base + "/q", decode: decodeSimple}
			put := func(c *framework.Client, payload string) (string, error) {
				sq, err := queue.NewSimple(c, q.path, queue.String{})
				if err != nil {
					return "", err
				}
				return sq.Offer(ctx, payload)
			}
			if err := putItems(ctx, r, put, "one"); err != nil {
				return nil, err
			}
			sq, err := queue.NewSimple(r.w.victim, q.path, queue.String{})
			if err != nil {
				return nil, err
			}
			var d xdeliveries
			return &xround{
				call: func(ctx context.Context) error {
					item, ok, err := sq.Peek(ctx)
					if ok {
						d.add(item)
					}
					return err
				},
				final: func(ctx context.Context) []string { return conserved(ctx, r, q, d.counts(), nil) },
			}, nil
		}}
		requireViolation(t, violationsOf(t, op, "none", 0), "conservation:")
	})
	t.Run("cache", func(t *testing.T) {
		server := map[string]cache.ChildData{
			"/a":   {Path: "/a", Data: []byte("a"), Stat: framework.Stat{Czxid: 1, Mzxid: 1, Pzxid: 5, Cversion: 1, NumChildren: 1}},
			"/a/b": {Path: "/a/b", Data: []byte("b"), Stat: framework.Stat{Czxid: 5, Mzxid: 5, Pzxid: 5}},
		}
		stale := map[string]cache.ChildData{
			"/a":   {Path: "/a", Data: []byte("a"), Stat: framework.Stat{Czxid: 1, Mzxid: 1, Pzxid: 1}},
			"/a/b": server["/a/b"],
		}
		assert.Empty(t, diffCache(server, server))
		d := diffCache(stale, server)
		require.Len(t, d, 1)
		assert.Contains(t, d[0], "Stat")
		ev := func(typ cache.EventType, p string, czxid, mzxid int64) cache.Event {
			return cache.Event{Type: typ, Data: &cache.ChildData{Path: p, Stat: framework.Stat{Czxid: czxid, Mzxid: mzxid}}}
		}
		good := []cache.Event{ev(cache.TreeNodeAdded, "/a", 1, 1), ev(cache.TreeNodeAdded, "/a/b", 5, 5)}
		assert.Empty(t, checkEvents(good, 0, server, "tree"))
		twice := append(good, ev(cache.TreeNodeAdded, "/a/b", 5, 5))
		requireViolation(t, checkEvents(twice, 0, server, "tree"), "events: /a/b added twice")
		unheld := []cache.Event{ev(cache.TreeNodeRemoved, "/x", 3, 3)}
		requireViolation(t, checkEvents(unheld, 0, nil, "tree"), "events: removal of /x")
		outOfOrder := []cache.Event{ev(cache.TreeNodeAdded, "/a/b", 5, 5), ev(cache.TreeNodeAdded, "/a", 1, 1)}
		requireViolation(t, checkEvents(outOfOrder, 0, server, "tree"), "events: the change of /a ")
		requireViolation(t, checkEvents(good[:1], 0, server, "tree"), "events: their replay holds")
		neverRemoved := append(slices.Clone(good), ev(cache.TreeNodeRemoved, "/a/b", 5, 5), ev(cache.TreeNodeAdded, "/a/b", 5, 5))
		requireViolation(t, checkEvents(neverRemoved, 0, server, "tree"), "events: /a/b (czxid 0x5) reported removed")
	})
}

// fakeLease is a lease of a lock that was never taken.
type fakeLease struct{}

func (fakeLease) Done() <-chan struct{}         { return nil }
func (fakeLease) Release(context.Context) error { return nil }
