package atomic_test

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/zktest"
)

// A resent setData's NoNode is not "not applied". CompareAndSet(5, 6): its setData is
// applied by the server (5 -> 6, seen by another client), the reply is lost with the
// connection, another participant deletes the counter node, and the client sends the
// setData again: NoNode. The package doc says that "Succeeded false with a nil error
// means ... nothing was written"; here the server wrote 6.
func TestCompareAndSetAppliedThenDeletedIsNotNothingWritten(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var (
		mu    sync.Mutex
		armed bool
	)
	c1 := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second),
		framework.WithRequestHook(func(op string) {
			mu.Lock()
			defer mu.Unlock()
			if armed && op == "setData" {
				armed = false
				proxy.HoldReplies() // before the setData goes out: its reply is held
			}
		}))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/counters/lostreply-applied-then-deleted"

	n, err := atomic.NewLong(c1, path)
	require.NoError(t, err)
	ok, err := n.Initialize(ctx, 5)
	require.NoError(t, err)
	require.True(t, ok)

	mu.Lock()
	armed = true
	mu.Unlock()
	type out struct {
		res atomic.Result[int64]
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := n.CompareAndSet(ctx, 5, 6)
		done <- out{res, err}
	}()
	six := binary.BigEndian.AppendUint64(nil, 6)
	require.Eventually(t, func() bool {
		data, _, err := other.GetData(ctx, path)
		return err == nil && string(data) == string(six)
	}, 20*time.Second, 10*time.Millisecond, "CompareAndSet's setData was not applied")
	require.NoError(t, other.Delete(ctx, path, framework.WithVersion(-1)))
	proxy.DropConnections() // the reply is lost; the client sends the setData again
	proxy.Heal()
	var got out
	select {
	case got = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("CompareAndSet did not return")
	}
	require.Falsef(t, !got.res.Succeeded && got.err == nil,
		"CompareAndSet returned %+v with a nil error (nothing written), but the server applied 5 -> 6 before the node was deleted", got.res)
	require.ErrorIs(t, got.err, atomic.ErrUnknownOutcome)
}

// Every blocking call honours its context. An increment's setData is applied (its reply
// lost with the connection), another client writes, and the client's resent setData is
// answered BadVersion: the outcome is unknown, and SetDataOn reads the node back to tell.
// That read goes out on a stalled connection (a hung server) and the caller's context
// ends right then. Increment must return promptly; it waits for the read back on a
// context detached from the caller's (versioned.readBackTimeout, 10 s).
func TestIncrementReadBackHonoursContext(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	callCtx, cancelCall := context.WithCancel(ctx)
	defer cancelCall()
	var (
		mu       sync.Mutex
		phase    int // 1: hold the next setData's reply; 2: stall and cancel at the next getData
		canceled time.Time
	)
	c1 := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second),
		framework.WithRequestHook(func(op string) {
			mu.Lock()
			defer mu.Unlock()
			switch {
			case phase == 1 && op == "setData":
				phase = 2
				proxy.HoldReplies()
			case phase == 3 && op == "getData": // the read back
				phase = 4
				proxy.Stall()
				canceled = time.Now()
				cancelCall()
			}
		}))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	const path = "/counters/lostreply-readback"

	n, err := atomic.NewLong(c1, path)
	require.NoError(t, err)
	ok, err := n.Initialize(ctx, 5)
	require.NoError(t, err)
	require.True(t, ok)

	mu.Lock()
	phase = 1
	mu.Unlock()
	type out struct {
		res atomic.Result[int64]
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := n.Increment(callCtx)
		done <- out{res, err}
	}()
	six := binary.BigEndian.AppendUint64(nil, 6)
	require.Eventually(t, func() bool {
		data, _, err := other.GetData(ctx, path)
		return err == nil && string(data) == string(six)
	}, 20*time.Second, 10*time.Millisecond, "the increment's setData was not applied")
	_, err = other.SetData(ctx, path, binary.BigEndian.AppendUint64(nil, 100), -1) // the resend finds version 2
	require.NoError(t, err)
	mu.Lock()
	phase = 3
	mu.Unlock()
	proxy.DropConnections() // the reply is lost; the client sends the setData again
	proxy.Heal()
	var got out
	select {
	case got = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Increment did not return")
	}
	mu.Lock()
	reached, at := phase == 4, canceled
	mu.Unlock()
	proxy.Heal()
	require.True(t, reached, "the increment did not read back after its resent setData's BadVersion (returned %+v, %v)", got.res, got.err)
	late := time.Since(at)
	require.Error(t, got.err)
	require.Truef(t, errors.Is(got.err, atomic.ErrUnknownOutcome) || errors.Is(got.err, context.Canceled), "%v", got.err)
	require.Lessf(t, late, 2*time.Second, "Increment returned %v after its context ended (err: %v)", late.Round(100*time.Millisecond), got.err)
}

// noRetry allows no retry: one optimistic try, then the promoted one.
type noRetry struct{}

func (noRetry) AllowRetry(int, time.Duration) (time.Duration, bool) { return 0, false }

// Every blocking call honours its context, clean-ups included. A promoted increment
// (WithPromotedToLock) holds the promotion lock; its setData goes out on a stalled
// connection (a hung server) and the caller's context ends right then. Increment must
// return promptly (the lock's node is deleted in the background, as a guaranteed delete
// is); it releases the lock on a context detached from the caller's (cleanupTimeout, 10 s).
func TestPromotedIncrementHonoursContext(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 90*time.Second)
	callCtx, cancelCall := context.WithCancel(ctx)
	defer cancelCall()
	const path, lockPath = "/counters/lostreply-promoted", "/counters/lostreply-promoted-lock"
	var (
		mu       sync.Mutex
		phase    int // 1: the optimistic setData loses the race; 2: stall at the promoted setData
		canceled time.Time
	)
	c1 := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithSessionTimeout(20*time.Second),
		framework.WithRequestHook(func(op string) {
			if op != "setData" {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			switch phase {
			case 1: // someone else writes first: the optimistic try conflicts
				phase = 2
				_, err := other.SetData(ctx, path, binary.BigEndian.AppendUint64(nil, 100), -1)
				if err != nil {
					t.Errorf("other's write: %v", err)
				}
			case 2: // the promoted try's write, with the lock held
				phase = 3
				proxy.Stall()
				canceled = time.Now()
				cancelCall()
			}
		}))

	n, err := atomic.NewLong(c1, path, atomic.WithRetryPolicy(noRetry{}), atomic.WithPromotedToLock(lockPath, noRetry{}, 0))
	require.NoError(t, err)
	ok, err := n.Initialize(ctx, 5)
	require.NoError(t, err)
	require.True(t, ok)

	mu.Lock()
	phase = 1
	mu.Unlock()
	type out struct {
		res atomic.Result[int64]
		err error
	}
	done := make(chan out, 1)
	go func() {
		res, err := n.Increment(callCtx)
		done <- out{res, err}
	}()
	var got out
	select {
	case got = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("Increment did not return")
	}
	mu.Lock()
	reached, at := phase == 3, canceled
	mu.Unlock()
	late := time.Since(at)
	proxy.Heal()
	require.True(t, reached, "the increment did not make a promoted try (returned %+v, %v)", got.res, got.err)
	require.Error(t, got.err)
	require.Lessf(t, late, 2*time.Second, "Increment returned %v after its context ended (err: %v)", late.Round(100*time.Millisecond), got.err)
}
