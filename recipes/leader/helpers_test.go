package leader_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

// latchNode and lockNode are the names of latch and selector nodes (Curator's too).
var (
	latchNode = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-latch-[0-9]{10}$`)
	lockNode  = regexp.MustCompile(`^_c_[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}-lock-[0-9]{10}$`)
)

func newLatch(t testing.TB, c *framework.Client, path, id string, opts ...leader.LatchOption) *leader.Latch {
	t.Helper()
	l, err := leader.NewLatch(c, path, id, opts...)
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	return l
}

func startLatch(t testing.TB, c *framework.Client, path, id string, opts ...leader.LatchOption) *leader.Latch {
	t.Helper()
	l := newLatch(t, c, path, id, opts...)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, l.Start(ctx))
	return l
}

// await fails the test unless l becomes leader within d, and returns its term.
func await(t testing.TB, l *leader.Latch, d time.Duration, what string) *leader.Term {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	require.NoError(t, l.Await(ctx), what)
	term, err := l.Term()
	require.NoError(t, err, what)
	return term
}

// ids returns the participants' ids.
func ids(ps []leader.Participant) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.ID)
	}
	return out
}

// assertNoChildren waits for the clients' guaranteed deletes, then checks that nothing
// is left under path.
func assertNoChildren(t testing.TB, connect, path string, clients ...*framework.Client) {
	t.Helper()
	for _, c := range clients {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		err := c.WaitGuaranteedDeletes(ctx)
		cancel()
		if err != nil && err != framework.ErrClosed {
			require.NoError(t, err)
		}
	}
	var kids []string
	empty := func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		k, err := zktest.Children(ctx, connect, path)
		kids = k
		return err == nil && len(k) == 0
	}
	assert.Eventually(t, empty, 15*time.Second, 50*time.Millisecond, "children left under %s: %v", path, kids)
}

// recorder records a latch's listener calls.
type recorder struct {
	mu  sync.Mutex
	evs []bool
	ch  chan bool
}

func record(l *leader.Latch) *recorder {
	r := &recorder{ch: make(chan bool, 100)}
	l.AddListener(func(isLeader bool) {
		r.mu.Lock()
		r.evs = append(r.evs, isLeader)
		r.mu.Unlock()
		r.ch <- isLeader
	})
	return r
}

func (r *recorder) events() []bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]bool(nil), r.evs...)
}

func (r *recorder) wait(t testing.TB, want bool, d time.Duration) {
	t.Helper()
	select {
	case got := <-r.ch:
		require.Equal(t, want, got, "listener event")
	case <-time.After(d):
		t.Fatalf("no listener event %v within %v", want, d)
	}
}

// checker counts leaders: a participant that begins leading while another's leadership
// has not ended (its done channel is open) is a violation.
type checker struct {
	mu         sync.Mutex
	live       map[string]<-chan struct{}
	terms      int
	violations []string
	changed    chan struct{}
}

func newChecker() *checker {
	return &checker{live: map[string]<-chan struct{}{}, changed: make(chan struct{}, 1)}
}

func (c *checker) enter(id string, done <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if testutil.IsClosed(done) {
		return
	}
	for other, d := range c.live {
		if other != id && !testutil.IsClosed(d) {
			c.violations = append(c.violations, fmt.Sprintf("%s leads while %s still leads", id, other))
		}
	}
	c.live[id] = done
	c.terms++
	select {
	case c.changed <- struct{}{}:
	default:
	}
}

func (c *checker) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.terms
}

// leaders returns the ids whose leadership has not ended.
func (c *checker) leaders() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	for id, d := range c.live {
		if !testutil.IsClosed(d) {
			out = append(out, id)
		}
	}
	sort.Strings(out)
	return out
}

// waitNewTerm waits until more than n terms have begun and one leads now; it returns
// the leader.
func (c *checker) waitNewTerm(t testing.TB, n int, d time.Duration, what string) string {
	t.Helper()
	var who string
	require.Eventually(t, func() bool {
		ls := c.leaders()
		if c.count() > n && len(ls) == 1 {
			who = ls[0]
			return true
		}
		return false
	}, d, 10*time.Millisecond, what)
	return who
}

func (c *checker) assertOK(t testing.TB) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	require.Empty(t, c.violations, "more than one leader at a time")
}

// followLatch feeds l's terms into ck until ctx ends; errors go to errs.
func followLatch(ctx context.Context, l *leader.Latch, ck *checker, errs chan<- error) {
	for {
		err := l.Await(ctx)
		if ctx.Err() != nil || errors.Is(err, leader.ErrClosed) {
			errs <- nil
			return
		}
		if err != nil {
			errs <- fmt.Errorf("%s: await: %w", l.ID(), err)
			return
		}
		term, err := l.Term()
		if err != nil {
			continue // lost again in between
		}
		ck.enter(l.ID(), term.Done())
		select {
		case <-term.Done():
		case <-ctx.Done():
		}
	}
}
