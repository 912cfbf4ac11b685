package reliability_test

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/recipes/barrier"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/recipes/groupmember"
	"github.com/zoocurator/zoocurator/recipes/multilock"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
	"github.com/zoocurator/zoocurator/zktest"
)

// badPaths breaks each of ZooKeeper's path rules once.
var badPaths = map[string]string{
	"empty":            "",
	"relative":         "a/b",
	"trailing slash":   "/a/",
	"empty component":  "/a//b",
	"dot":              "/a/./b",
	"dot dot":          "/a/../b",
	"NUL":              "/a\x00b",
	"control":          "/a\u0001",
	"DEL":              "/a\u007f",
	"C1 control":       "/a\u0085",
	"surrogate range":  "/a\ue000",
	"private use":      "/a\uf8ff",
	"specials":         "/a\ufff0",
	"outside BMP":      "/a\U0001F600",
	"invalid UTF-8":    "/a\xff",
	"zookeeper (root)": "/zookeeper/x",
}

// badCall is one call that must fail with a typed error, without panicking and without
// writing to ZooKeeper.
type badCall struct {
	name string
	call func() error
	want []error // errors.Is must hold for one of them
}

// TestBadInputEverywhere calls every public constructor and method with bad input and
// checks the typed error, that nothing panics, and that the server's znode count and the
// client's request count do not move.
func TestBadInputEverywhere(t *testing.T) {
	leakcheck.Check(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := connect(t, ens.ConnectString(), otherSession)
	closed := connect(t, ens.ConnectString(), otherSession)
	require.NoError(t, closed.Close())
	big := bytes.Repeat([]byte("x"), framework.DefaultMaxPacketSize)
	inv, arg, tooBig := framework.ErrInvalidPath, framework.ErrInvalidArgument, framework.ErrDataTooLarge

	var calls []badCall
	for what, p := range badPaths {
		want := []error{inv, arg}
		calls = append(calls,
			badCall{"mutex.New " + what, func() error { _, err := mutex.New(c, p); return err }, want},
			badCall{"semaphore.New " + what, func() error { _, err := semaphore.New(c, p, 2); return err }, want},
			badCall{"semaphore.NewMutex " + what, func() error { _, err := semaphore.NewMutex(c, p); return err }, want},
			badCall{"rwlock.New " + what, func() error { _, err := rwlock.New(c, p); return err }, want},
			badCall{"multilock.NewFromPaths " + what, func() error { _, err := multilock.NewFromPaths(c, "/ok", p); return err }, want},
			badCall{"barrier.New " + what, func() error { _, err := barrier.New(c, p); return err }, want},
			badCall{"doublebarrier.New " + what, func() error { _, err := doublebarrier.New(c, p, 2); return err }, want},
		)
		calls = append(calls,
			badCall{"persistentnode.New " + what, func() error { _, err := persistentnode.New(c, p, nil); return err }, want},
			badCall{"persistentnode.NewTTL " + what, func() error { _, err := persistentnode.NewTTL(c, p, time.Minute, nil); return err }, want},
			badCall{"groupmember.New " + what, func() error { _, err := groupmember.New(c, p, "id", nil); return err }, want},
			badCall{"sharedcount.New " + what, func() error { _, err := sharedcount.New(c, p, 0); return err }, want},
			badCall{"sharedcount.NewValue " + what, func() error { _, err := sharedcount.NewValue(c, p, nil); return err }, want},
			badCall{"atomic.NewLong " + what, func() error { _, err := atomic.NewLong(c, p); return err }, want},
			badCall{"atomic.NewValue " + what, func() error { _, err := atomic.NewValue(c, p); return err }, want},
		)
		if what == "zookeeper (root)" {
			continue // a valid path for plain operations (ZooKeeper itself guards it)
		}
		calls = append(calls,
			badCall{"cache.NewCuratorCache " + what, func() error { _, err := cache.NewCuratorCache(c, p); return err }, want},
			badCall{"Create " + what, func() error { _, err := c.Create(ctx, p, nil); return err }, want},
			badCall{"Delete " + what, func() error { return c.Delete(ctx, p) }, want},
			badCall{"GetData " + what, func() error { _, _, err := c.GetData(ctx, p); return err }, want},
			badCall{"SetData " + what, func() error { _, err := c.SetData(ctx, p, nil, -1); return err }, want},
			badCall{"Exists " + what, func() error { _, err := c.Exists(ctx, p); return err }, want},
			badCall{"Children " + what, func() error { _, _, err := c.Children(ctx, p); return err }, want},
			badCall{"Sync " + what, func() error { return c.Sync(ctx, p) }, want},
			badCall{"GetACL " + what, func() error { _, _, err := c.GetACL(ctx, p); return err }, want},
			badCall{"Transaction " + what, func() error { _, err := c.Transaction(ctx, framework.CheckOp(p, 0)); return err }, want},
		)
	}
	calls = append(calls,
		badCall{"mutex.New nil client", func() error { _, err := mutex.New(nil, "/x"); return err }, []error{arg}},
		badCall{"mutex.New root", func() error { _, err := mutex.New(c, "/"); return err }, []error{arg}},
		badCall{"mutex.New huge data", func() error { _, err := mutex.New(c, "/x", mutex.WithNodeData(big)); return err }, []error{tooBig}},
		badCall{"mutex.New local batch 0", func() error { _, err := mutex.New(c, "/x", mutex.WithLocalBatch(0)); return err }, []error{arg}},
		badCall{"mutex.New local batch 256", func() error { _, err := mutex.New(c, "/x", mutex.WithLocalBatch(256)); return err }, []error{arg}},
		badCall{"semaphore.New 0 leases", func() error { _, err := semaphore.New(c, "/x", 0); return err }, []error{arg}},
		badCall{"semaphore.New -1 leases", func() error { _, err := semaphore.New(c, "/x", -1); return err }, []error{arg}},
		badCall{"semaphore.New nil client", func() error { _, err := semaphore.New(nil, "/x", 1); return err }, []error{arg}},
		badCall{"semaphore.NewShared seed 0", func() error { _, err := semaphore.NewShared(c, "/x", "/count", 0); return err }, []error{arg}},
		badCall{"semaphore.NewShared bad count path", func() error { _, err := semaphore.NewShared(c, "/x", "count", 1); return err }, []error{inv}},
		badCall{"semaphore.SetCount 0", func() error { return semaphore.SetCount(ctx, c, "/count", 0) }, []error{arg}},
		badCall{"semaphore huge data", func() error { _, err := semaphore.New(c, "/x", 1, semaphore.WithNodeData(big)); return err }, []error{tooBig}},
		badCall{"rwlock.New nil client", func() error { _, err := rwlock.New(nil, "/x"); return err }, []error{arg}},
		badCall{"sharedcount.New nil client", func() error { _, err := sharedcount.New(nil, "/x", 0); return err }, []error{arg}},
		badCall{"sharedcount.NewValue huge seed", func() error { _, err := sharedcount.NewValue(c, "/x", big); return err }, []error{tooBig}},
		badCall{"atomic.NewLong nil client", func() error { _, err := atomic.NewLong(nil, "/x"); return err }, []error{arg}},
		badCall{"cache.NewCuratorCache nil client", func() error { _, err := cache.NewCuratorCache(nil, "/x"); return err }, []error{arg}},
		badCall{"closed client sharedcount", func() error {
			sc, err := sharedcount.New(closed, "/x", 0)
			if err != nil {
				return err
			}
			return sc.Start(ctx)
		}, []error{framework.ErrClosed}},
		badCall{"closed client atomic", func() error {
			l, err := atomic.NewLong(closed, "/x")
			if err != nil {
				return err
			}
			_, err = l.Increment(ctx)
			return err
		}, []error{framework.ErrClosed}},
		badCall{"multilock.New empty", func() error { _, err := multilock.New(); return err }, []error{multilock.ErrNoLocks}},
		badCall{"multilock.New nil lock", func() error { _, err := multilock.New(nil); return err }, []error{arg}},
		badCall{"multilock.NewFromPaths duplicate", func() error { _, err := multilock.NewFromPaths(c, "/a", "/a"); return err }, []error{multilock.ErrDuplicatePath}},
		badCall{"barrier.New nil client", func() error { _, err := barrier.New(nil, "/x"); return err }, []error{arg}},
		badCall{"doublebarrier.New 0 members", func() error { _, err := doublebarrier.New(c, "/x", 0); return err }, []error{arg}},
		badCall{"doublebarrier.New -3 members", func() error { _, err := doublebarrier.New(c, "/x", -3); return err }, []error{arg}},
		badCall{"Create huge data", func() error { _, err := c.Create(ctx, "/big", big); return err }, []error{tooBig}},
		badCall{"SetData huge data", func() error { _, err := c.SetData(ctx, "/big", big, -1); return err }, []error{tooBig}},
		badCall{"Create TTL without TTL", func() error {
			_, err := c.Create(ctx, "/ttl", nil, framework.WithMode(framework.PersistentWithTTL))
			return err
		}, []error{arg}},
		badCall{"SetACL empty", func() error { _, err := c.SetACL(ctx, "/x", nil, -1); return err }, []error{arg}},
		badCall{"Transaction empty", func() error { _, err := c.Transaction(ctx); return err }, []error{arg}},
		badCall{"closed client Create", func() error { _, err := closed.Create(ctx, "/x", nil); return err }, []error{framework.ErrClosed}},
		badCall{"closed client mutex", func() error {
			m, err := mutex.New(closed, "/x")
			if err != nil {
				return err
			}
			_, err = m.Acquire(ctx)
			return err
		}, []error{framework.ErrClosed}},
		badCall{"closed client semaphore", func() error {
			s, err := semaphore.New(closed, "/x", 1)
			if err != nil {
				return err
			}
			_, err = s.Acquire(ctx)
			return err
		}, []error{framework.ErrClosed}},
		badCall{"closed client barrier", func() error {
			b, err := barrier.New(closed, "/x")
			if err != nil {
				return err
			}
			return b.Set(ctx)
		}, []error{framework.ErrClosed}},
		badCall{"persistentnode.New nil client", func() error { _, err := persistentnode.New(nil, "/x", nil); return err }, []error{arg}},
		badCall{"persistentnode.New huge data", func() error { _, err := persistentnode.New(c, "/x", big); return err }, []error{tooBig}},
		badCall{"persistentnode.New TTL mode without TTL", func() error {
			_, err := persistentnode.New(c, "/x", nil, persistentnode.WithMode(framework.PersistentWithTTL))
			return err
		}, []error{arg}},
		badCall{"persistentnode.NewTTL 0 TTL", func() error { _, err := persistentnode.NewTTL(c, "/x", 0, nil); return err }, []error{arg}},
		badCall{"groupmember.New nil client", func() error { _, err := groupmember.New(nil, "/x", "id", nil); return err }, []error{arg}},
		badCall{"groupmember.New id with /", func() error { _, err := groupmember.New(c, "/x", "a/b", nil); return err }, []error{arg}},
		badCall{"groupmember.New id ..", func() error { _, err := groupmember.New(c, "/x", "..", nil); return err }, []error{arg}},
		badCall{"groupmember.New id NUL", func() error { _, err := groupmember.New(c, "/x", "a\x00", nil); return err }, []error{inv}},
		badCall{"closed client persistent node", func() error {
			n, err := persistentnode.New(closed, "/x", nil)
			if err != nil {
				return err
			}
			return n.Start()
		}, []error{framework.ErrClosed}},
		badCall{"closed client group member", func() error {
			m, err := groupmember.New(closed, "/x", "id", nil)
			if err != nil {
				return err
			}
			defer m.Close()
			return m.Start(ctx)
		}, []error{framework.ErrClosed}},
		badCall{"closed client double barrier", func() error {
			d, err := doublebarrier.New(closed, "/x", 1)
			if err != nil {
				return err
			}
			return d.Enter(ctx)
		}, []error{framework.ErrClosed}},
	)

	before := c.Requests()
	znodes := func() int64 {
		n, err := zktest.MntrInt(leaderAddr(t), "zk_znode_count")
		require.NoError(t, err)
		return n
	}
	z0 := znodes()
	for _, bc := range calls {
		t.Run(bc.name, func(t *testing.T) {
			var err error
			require.NotPanics(t, func() { err = bc.call() })
			require.Error(t, err)
			ok := false
			for _, w := range bc.want {
				ok = ok || errors.Is(err, w)
			}
			assert.True(t, ok, "error %q is none of %v", err, bc.want)
			assert.NotContains(t, err.Error(), "%!", "a badly formatted message")
		})
	}
	assert.Equal(t, before, c.Requests(), "bad input sent requests to ZooKeeper")
	assert.Equal(t, z0, znodes(), "bad input wrote to ZooKeeper")
}

// TestReleaseMisuse: releasing twice, and releasing after the client closed, give typed
// errors and leave nothing behind.
func TestReleaseMisuse(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	c := e.others[0]
	m, err := mutex.New(c, e.base+"/m")
	require.NoError(t, err)
	s, err := semaphore.New(c, e.base+"/s", 2)
	require.NoError(t, err)
	rw, err := rwlock.New(c, e.base+"/rw")
	require.NoError(t, err)
	ml, err := multilock.NewFromPaths(c, e.base+"/a", e.base+"/b")
	require.NoError(t, err)
	type releaser interface{ Release(context.Context) error }
	acquire := []func() (releaser, error){
		func() (releaser, error) { return m.Acquire(ctx) },
		func() (releaser, error) { return s.Acquire(ctx) },
		func() (releaser, error) { return rw.WriteLock().Acquire(ctx) },
		func() (releaser, error) { return rw.ReadLock().Acquire(ctx) },
		func() (releaser, error) { return ml.Acquire(ctx) },
	}
	for i, acq := range acquire {
		l, err := acq()
		require.NoError(t, err, "lock %d", i)
		require.NoError(t, l.Release(ctx))
		err = l.Release(ctx)
		assert.True(t, errors.Is(err, mutex.ErrNotHeld) || errors.Is(err, multilock.ErrNotHeld), "lock %d: %v", i, err)
	}

	// A lease whose client closed: Release reports it; the server removed the node with the
	// session.
	victimMutex, err := mutex.New(e.victim, e.base+"/v")
	require.NoError(t, err)
	l, err := victimMutex.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, e.victim.Close())
	err = l.Release(ctx)
	assert.Error(t, err)
	assert.True(t, errors.Is(err, framework.ErrClosed) || errors.Is(err, mutex.ErrLeaseLost), "got %v", err)
	e.checkClean(e.base+"/m", e.base+"/s/leases", e.base+"/rw", e.base+"/a", e.base+"/b", e.base+"/v")
}
