package reliability_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/groupmember"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
)

// runPersistentNode: the victim keeps a protected ephemeral-sequential node and is a group
// member; another client is a member too and watches the node's parent throughout, and
// deletes the victim's node as the fault starts. After
// the fault heals, the victim's node is back (owned by its current session) within the
// liveness bound, the other member sees the victim, the parent never held two of the
// victim's nodes, and Close leaves nothing.
func runPersistentNode(t *testing.T, f fault) {
	e := newEnv(t, 1)
	parent, group := e.base+"/pn", e.base+"/group"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	node, err := persistentnode.New(e.victim, parent+"/member-", []byte("v"),
		persistentnode.WithMode(framework.EphemeralSequential), persistentnode.WithProtection())
	require.NoError(t, err)
	require.NoError(t, node.Start())
	defer node.Close()
	require.NoError(t, node.WaitForInitialCreate(ctx))
	path := node.ActualPath()
	vm, err := groupmember.New(e.victim, group, "victim", []byte("pv"))
	require.NoError(t, err)
	require.NoError(t, vm.Start(ctx))
	defer vm.Close()
	om, err := groupmember.New(e.others[0], group, "other", []byte("po"))
	require.NoError(t, err)
	require.NoError(t, om.Start(ctx))
	defer om.Close()

	// The watcher: every listing of the parent (after each change) has at most one node.
	wctx, wcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var most int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for wctx.Err() == nil {
			rctx, rcancel := context.WithTimeout(wctx, 2*time.Second)
			kids, _, w, err := e.others[0].ChildrenW(rctx, parent)
			rcancel()
			if err != nil { // no quorum, or a cut connection: look again shortly
				select {
				case <-time.After(50 * time.Millisecond):
				case <-wctx.Done():
				}
				continue
			}
			most = max(most, len(kids))
			select {
			case <-w.Done():
			case <-wctx.Done():
			}
		}
	}()

	heal := f.inject(t, e)
	// The node is deleted under the fault (where the ensemble takes the write), so that
	// its re-creation goes through the fault (a lost create reply, a cut connection).
	dctx, dcancel := context.WithTimeout(ctx, time.Second)
	_ = e.others[0].Delete(dctx, path)
	dcancel()
	time.Sleep(f.hold)
	heal()
	healed := time.Now()
	require.Eventually(t, func() bool {
		rctx, rcancel := context.WithTimeout(ctx, 2*time.Second)
		defer rcancel()
		st, err := e.others[0].Exists(rctx, path)
		return err == nil && st != nil && st.EphemeralOwner == e.victim.SessionID()
	}, livenessBound, 50*time.Millisecond, "liveness: the node is not back at %s", path)
	t.Logf("node in place %v after the fault healed", time.Since(healed))
	require.Eventually(t, func() bool {
		cur, err := om.CurrentMembers()
		return err == nil && string(cur["victim"]) == "pv"
	}, livenessBound, 50*time.Millisecond, "liveness: the other member does not see the victim")
	wcancel()
	wg.Wait()
	assert.LessOrEqual(t, most, 1, "the parent held %d nodes at once", most)
	count(t, "one-node", checkCount{ops: 1, violations: btoi(most > 1)})
	require.NoError(t, node.Close())
	require.NoError(t, vm.Close())
	require.NoError(t, om.Close())
	e.checkClean(parent, group)
}

// The persistent node and group member run under every fault in TestUnderFaults.
func init() { registerScenario("persistentnode", false, runPersistentNode) }
