package leader_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A Requeue made after the leadership function returned, while the selector gives its
// node up, either takes effect or fails: here the selector is alone, so
// taking effect means it leads again. The moment is made deterministic by holding the
// selector's goroutine in a request observer right after its release's delete was
// answered (the observer runs on the caller's goroutine).
func TestRequeueWhileLeadershipEndsTakesEffect(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	const path = "/leader/requeue-ending"
	var (
		mu      sync.Mutex
		armed   bool
		held    = make(chan struct{})
		release = make(chan struct{})
	)
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestObserver(func(ri framework.RequestInfo) {
		if ri.Op != "delete" || !strings.HasPrefix(ri.Path, path+"/") {
			return
		}
		mu.Lock()
		hold := armed
		armed = false
		mu.Unlock()
		if hold {
			close(held)
			<-release
		}
	}))
	led := make(chan int, 10)
	n := 0
	s := startSelector(t, c, path, "a", func(context.Context) error {
		n++
		if n == 1 {
			mu.Lock()
			armed = true
			mu.Unlock()
		}
		led <- n
		return nil
	})
	select {
	case <-led:
	case <-time.After(20 * time.Second):
		t.Fatal("the selector did not lead")
	}
	select {
	case <-held:
	case <-time.After(20 * time.Second):
		t.Fatal("the selector did not give its node up")
	}
	// Leadership has ended (fn returned, the node is deleted): the selector is not queued.
	err := s.Requeue()
	close(release)
	if err != nil {
		t.Logf("Requeue failed (allowed): %v", err)
		return
	}
	select {
	case <-led:
	case <-time.After(10 * time.Second):
		t.Fatal("Requeue returned nil after leadership ended, yet the selector did not lead again")
	}
	require.NoError(t, s.Close())
	assertNoChildren(t, srv.ConnectString(), path, c)
}
