package persistentnode_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

const listenerPanicChildEnv = "ZOOCURATOR_PN_LISTENER_PANIC_CHILD"

// TestNodeListenerPanicRecovered: a listener that panics must not take the process down
// (the latch, the caches, the queue consumers and the client's state listeners recover a
// listener's panic and log it); the Node goes on keeping its node. Run in a child process
// so that the crash is seen, not suffered.
func TestNodeListenerPanicRecovered(t *testing.T) {
	if connect := os.Getenv(listenerPanicChildEnv); connect != "" {
		listenerPanicChild(t, connect)
		return
	}
	srv := zktest.NewServer(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestNodeListenerPanicRecovered$", "-test.count=1")
	cmd.Env = append(os.Environ(), listenerPanicChildEnv+"="+srv.ConnectString())
	out, err := cmd.CombinedOutput()
	text := string(out)
	if i := strings.Index(text, "panic:"); i >= 0 {
		text = text[i:min(len(text), i+400)]
	}
	require.NoError(t, err, "the process died of a listener's panic:\n%s", text)
}

func listenerPanicChild(t *testing.T, connect string) {
	c := testutil.ConnectFailFast(t, connect)
	other := testutil.ConnectFailFast(t, connect)
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/pn/listener/panics"
	n, err := persistentnode.New(c, path, []byte("x"), persistentnode.WithMode(framework.Persistent))
	require.NoError(t, err)
	heard := make(chan persistentnode.Created, 4)
	n.AddListener(func(persistentnode.Created) { panic("a listener panics") })
	n.AddListener(func(ev persistentnode.Created) { heard <- ev })
	require.NoError(t, n.Start())
	defer func() { _ = n.Close() }()
	require.NoError(t, n.WaitForInitialCreate(ctx))
	require.NoError(t, other.Delete(ctx, path))
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := other.Exists(ctx, path)
		require.NoError(t, err)
		if st != nil {
			return
		}
		require.True(t, time.Now().Before(deadline), "the node was not made again after a listener panicked")
		time.Sleep(20 * time.Millisecond)
	}
}
