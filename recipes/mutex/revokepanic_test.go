package mutex_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

const revokePanicChildEnv = "ZOOCURATOR_MUTEX_REVOKE_PANIC_CHILD"

// TestRevocationListenerPanicRecovered: a revocation listener that panics must not take
// the process down (the latch's and the caches' listeners, queue handlers and the
// client's state listeners are recovered and logged). The listener runs on a goroutine
// the lease starts (internal/locks Lease.watch: go onRevoke()), with no recover. Run in a
// child process so that the crash is seen, not suffered.
func TestRevocationListenerPanicRecovered(t *testing.T) {
	if connect := os.Getenv(revokePanicChildEnv); connect != "" {
		revokePanicChild(t, connect)
		return
	}
	srv := zktest.NewServer(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestRevocationListenerPanicRecovered$", "-test.count=1")
	cmd.Env = append(os.Environ(), revokePanicChildEnv+"="+srv.ConnectString())
	out, err := cmd.CombinedOutput()
	text := string(out)
	if i := strings.Index(text, "panic:"); i >= 0 {
		text = text[i:min(len(text), i+500)]
	}
	require.NoError(t, err, "the process died of a revocation listener's panic:\n%s", text)
}

func revokePanicChild(t *testing.T, connect string) {
	c := testutil.ConnectFailFast(t, connect)
	other := testutil.ConnectFailFast(t, connect)
	ctx := testutil.Context(t, 30*time.Second)
	called := make(chan struct{})
	m, err := mutex.New(c, "/mutex/revokepanic", mutex.WithRevocationListener(func(*mutex.Lease) {
		close(called)
		panic("a revocation listener panics")
	}))
	require.NoError(t, err)
	l, err := m.Acquire(ctx)
	require.NoError(t, err)
	require.NoError(t, mutex.Revoke(ctx, other, l.Node()))
	select {
	case <-called:
	case <-ctx.Done():
		t.Fatal("the revocation listener was not called")
	}
	// The process lives on: the lease can still be released.
	time.Sleep(500 * time.Millisecond)
	require.NoError(t, l.Release(ctx))
}
