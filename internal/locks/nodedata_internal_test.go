package locks

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestHungResolverDoesNotBlockAcquire: with a resolver that does not answer until the
// test lets it, a lock is made and acquired at once, its node carrying Curator's fallback
// (no data); once the resolver answers, the next acquisition's node carries the address.
func TestHungResolverDoesNotBlockAcquire(t *testing.T) {
	leakcheck.Check(t)
	release := make(chan struct{})
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	setLookupForTest(t, func(ctx context.Context, host string) ([]string, error) {
		<-release // a resolver that ignores its context too
		return []string{"2001:db8::7", "192.0.2.7"}, nil
	})
	t.Cleanup(open)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	c := testutil.Connect(t, srv.ConnectString())

	acquire := func() ([]byte, error) {
		l, err := New(Config{Client: c, Path: "/locks/dns", LockName: "lock-", MaxLeases: 1})
		if err != nil {
			return nil, err
		}
		h, err := l.Acquire(ctx, false)
		if err != nil {
			return nil, err
		}
		data, _, err := c.GetData(ctx, h.Path)
		if rerr := l.Release(ctx, h); err == nil {
			err = rerr
		}
		return data, err
	}
	type result struct {
		data []byte
		err  error
	}
	res := make(chan result, 1)
	go func() { d, err := acquire(); res <- result{d, err} }()
	var r result
	select {
	case r = <-res:
	case <-time.After(20 * time.Second):
		t.Fatal("Acquire while the resolver hangs: no result after 20s")
	}
	require.NoError(t, r.err)
	assert.Empty(t, r.data, "Curator's fallback while the address is unknown")

	open()
	require.NoError(t, settleForTest(ctx))
	data, err := acquire()
	require.NoError(t, err)
	assert.Equal(t, "192.0.2.7", string(data), "the address, IPv4 preferred, once resolved")
	testutil.RequireNoChildren(t, srv.ConnectString(), "/locks/dns")
}

// TestFailedLookupIsRetried: a lookup that fails gives Curator's fallback (no data) but
// is not remembered: a later call looks the address up again and gets it.
func TestFailedLookupIsRetried(t *testing.T) {
	leakcheck.Check(t)
	var (
		mu    sync.Mutex
		fails = true
	)
	setLookupForTest(t, func(ctx context.Context, host string) ([]string, error) {
		mu.Lock()
		defer mu.Unlock()
		if fails {
			return nil, errors.New("temporary failure in name resolution")
		}
		return []string{"192.0.2.8"}, nil
	})
	ctx := testutil.Context(t, 20*time.Second)
	assert.Empty(t, DefaultNodeData(), "the fallback while the lookup fails")
	require.NoError(t, settleForTest(ctx))
	mu.Lock()
	fails = false
	mu.Unlock()
	DefaultNodeData() // due again: starts a new lookup
	require.NoError(t, settleForTest(ctx))
	assert.Equal(t, "192.0.2.8", string(DefaultNodeData()), "a failed lookup is not cached forever")
}
