package persistentnode_test

import (
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestSetDataFailingDuringStepIsWrittenLater: SetData fails (NoAuth for a moment) while
// the loop is inside step, between its read of dirty and its clearing of dirty; the data
// must still be written once the node is seen again, as SetData's error promises.
func TestSetDataFailingDuringStepIsWrittenLater(t *testing.T) {
	srv := zktest.NewServer(t)
	proxy := zktest.NewProxy(t, srv.ConnectString())
	var mu sync.Mutex
	armed := false
	steps := 0
	inStep := make(chan struct{})
	release := make(chan struct{})
	second := make(chan struct{})
	third := make(chan struct{})
	hook := func(op string) {
		if op != "exists" {
			return
		}
		buf := make([]byte, 64<<10)
		if !strings.Contains(string(buf[:runtime.Stack(buf, false)]), "(*Node).step") {
			return
		}
		mu.Lock()
		if !armed {
			mu.Unlock()
			return
		}
		steps++
		s := steps
		mu.Unlock()
		switch s {
		case 1:
			close(inStep)
			<-release
		case 2:
			close(second)
		case 3:
			close(third)
		}
	}
	c := testutil.ConnectFailFast(t, proxy.ConnectString(), framework.WithRequestHook(hook))
	other := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	n, err := persistentnode.New(c, "/pn/d", []byte("old"), persistentnode.WithMode(framework.Persistent))
	require.NoError(t, err)
	require.NoError(t, n.Start())
	defer n.Close()
	require.NoError(t, n.WaitForInitialCreate(ctx))
	mu.Lock()
	armed = true
	mu.Unlock()
	proxy.DropConnections() // Reconnected pokes the loop
	testutil.WaitClosed(t, inStep, 20*time.Second, "step")
	_, err = other.SetACL(ctx, "/pn/d", zk.WorldACL(zk.PermRead|zk.PermAdmin), -1)
	require.NoError(t, err)
	err = n.SetData(ctx, []byte("new"))
	t.Logf("SetData: %v", err)
	require.Error(t, err)
	_, err = other.SetACL(ctx, "/pn/d", zk.WorldACL(zk.PermAll), -1)
	require.NoError(t, err)
	close(release)
	// step 2 runs (poked by SetData); a reconnection makes step 3: step 2 is over by then.
	testutil.WaitClosed(t, second, 20*time.Second, "step 2")
	proxy.DropConnections()
	testutil.WaitClosed(t, third, 20*time.Second, "step 3")
	data, _, err := other.GetData(ctx, "/pn/d")
	require.NoError(t, err)
	require.Equal(t, "new", string(data), "SetData said it would write again once the node is seen; n.Data()=%q", n.Data())
}
