package groupmember_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/groupmember"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestConcurrentCloseWaits: while a first Close is still deleting the member node (its
// delete held by a request hook), a second Close does not return; it returns after the
// first, and the node is gone by then.
func TestConcurrentCloseWaits(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	var (
		mu      sync.Mutex
		armed   bool
		blocked = make(chan struct{})
		release = make(chan struct{})
	)
	hook := func(op string) {
		if op != "delete" {
			return
		}
		mu.Lock()
		first := armed
		armed = false
		mu.Unlock()
		if first {
			close(blocked)
			<-release
		}
	}
	var releaseOnce sync.Once
	open := func() { releaseOnce.Do(func() { close(release) }) }
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestHook(hook))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const g = "/services/closing"
	m := join(t, c, g, "a", "pa")
	t.Cleanup(open) // runs before the member's and the client's Close, also when the test fails early
	mu.Lock()
	armed = true
	mu.Unlock()

	firstDone := make(chan struct{})
	first := make(chan error, 1)
	go func() { err := m.Close(); close(firstDone); first <- err }()
	testutil.WaitClosed(t, blocked, 20*time.Second, "the first Close's delete")
	second := make(chan error, 1)
	go func() {
		err := m.Close()
		select {
		case <-firstDone:
			second <- err
		default:
			second <- errSecondEarly
		}
	}()
	testutil.NotYet(t, second, 300*time.Millisecond, "the second Close, while the first still closes")
	open()
	require.NoError(t, testutil.Result(t, first, 20*time.Second, "the first Close"))
	require.NoError(t, testutil.Result(t, second, 20*time.Second, "the second Close"))
	st, err := other.Exists(ctx, g+"/a")
	require.NoError(t, err)
	require.Nil(t, st, "the member node is gone once Close returned")
}

type earlyError struct{}

func (earlyError) Error() string { return "the second Close returned before the first" }

var errSecondEarly error = earlyError{}

// TestCloseFromListenerDuringClose: a listener that calls Close while another Close is
// under way (that Close waiting for the listener's goroutine to end) does not deadlock:
// the listener's Close returns, the first Close returns, and the member node is gone.
func TestCloseFromListenerDuringClose(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const g = "/services/listenerclose"
	m := join(t, c, g, "a", "pa")

	inListener := make(chan struct{})
	proceed := make(chan struct{})
	fromListener := make(chan error, 1)
	var once sync.Once
	m.AddListener(func(ev cache.Event) {
		if ev.Type != cache.ChildAdded || groupmember.IDFromPath(ev.Data.Path) != "b" {
			return
		}
		once.Do(func() {
			close(inListener)
			<-proceed
			fromListener <- m.Close()
		})
	})
	var proceedOnce sync.Once
	t.Cleanup(func() { proceedOnce.Do(func() { close(proceed) }) })
	join(t, other, g, "b", "pb")
	testutil.WaitClosed(t, inListener, 20*time.Second, "the listener hearing b join")

	first := make(chan error, 1)
	go func() { first <- m.Close() }()
	// The first Close is under way once the member reports itself closed.
	require.Eventually(t, func() bool {
		_, err := m.CurrentMembers()
		return errors.Is(err, groupmember.ErrClosed)
	}, 20*time.Second, 5*time.Millisecond, "the first Close starts")
	proceedOnce.Do(func() { close(proceed) })
	require.NoError(t, testutil.Result(t, fromListener, 20*time.Second, "the listener's Close"))
	require.NoError(t, testutil.Result(t, first, 20*time.Second, "the first Close"))
	st, err := other.Exists(ctx, g+"/a")
	require.NoError(t, err)
	require.Nil(t, st, "the member node is gone once Close returned")
}
