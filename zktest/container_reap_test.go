package zktest_test

import (
	"context"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/zktest"
)

// The harness's servers reap empty container nodes within seconds, so tests can check
// that recipes leave no parents behind.
func TestContainerNodesAreReapedQuickly(t *testing.T) {
	s := zktest.NewServer(t)
	conn, _ := connect(t, s.ConnectString(), 4*time.Second, nil)
	_, err := conn.CreateContainer("/box", nil, zk.FlagContainer, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	_, err = conn.Create("/box/child", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)
	require.NoError(t, conn.Delete("/box/child", -1))
	require.Eventually(t, func() bool {
		kids, err := zktest.Children(context.Background(), s.ConnectString(), "/")
		if err != nil {
			return false
		}
		for _, k := range kids {
			if k == "box" {
				return false
			}
		}
		return true
	}, 10*time.Second, 100*time.Millisecond)
}
