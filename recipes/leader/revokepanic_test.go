package leader_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

const revokePanicChildEnv = "ZOOCURATOR_LATCH_REVOKE_PANIC_CHILD"

// TestLatchRevocationListenerPanicRecovered: a latch's revocation listener that panics
// must not take the process down, as a latch listener's panic does not (Latch recovers
// and logs those). Latch.revoked runs it with go fn(l), no recover. Run in a child
// process so that the crash is seen, not suffered.
func TestLatchRevocationListenerPanicRecovered(t *testing.T) {
	if connect := os.Getenv(revokePanicChildEnv); connect != "" {
		latchRevokePanicChild(t, connect)
		return
	}
	srv := zktest.NewServer(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLatchRevocationListenerPanicRecovered$", "-test.count=1")
	cmd.Env = append(os.Environ(), revokePanicChildEnv+"="+srv.ConnectString())
	out, err := cmd.CombinedOutput()
	text := string(out)
	if i := strings.Index(text, "panic:"); i >= 0 {
		text = text[i:min(len(text), i+500)]
	}
	require.NoError(t, err, "the process died of a revocation listener's panic:\n%s", text)
}

func latchRevokePanicChild(t *testing.T, connect string) {
	c := testutil.ConnectFailFast(t, connect)
	other := testutil.ConnectFailFast(t, connect)
	ctx := testutil.Context(t, 30*time.Second)
	called := make(chan struct{})
	l, err := leader.NewLatch(c, "/latch/revokepanic", "a", leader.WithLatchRevocationListener(func(*leader.Latch) {
		close(called)
		panic("a revocation listener panics")
	}))
	require.NoError(t, err)
	require.NoError(t, l.Start(ctx))
	defer func() { _ = l.Close() }()
	require.NoError(t, l.Await(ctx))
	term, err := l.Term()
	require.NoError(t, err)
	require.NoError(t, leader.Revoke(ctx, other, term.Node()))
	select {
	case <-called:
	case <-ctx.Done():
		t.Fatal("the revocation listener was not called")
	}
	time.Sleep(500 * time.Millisecond) // the process lives on
}
