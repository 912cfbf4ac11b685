package locks_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/zktest"
)

func semAcquirer(ctx context.Context, c *framework.Client, path string) (func(context.Context) error, error) {
	s, err := semaphore.New(c, path, 1)
	if err != nil {
		return nil, err
	}
	l, err := s.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	return l.Release, nil
}

// TestReleaseLeavesUnreadableReplacement: for each lock kind, as the lease's first read
// of its own node goes out, another client deletes that node and makes one of the same
// name, same data, with an ACL the holder may not read, in one transaction. The read is
// answered NoAuth: that node is not the lease's (exists, which needs no permission, shows
// another owner). The release must not delete it, and reports the lease lost.
func TestReleaseLeavesUnreadableReplacement(t *testing.T) {
	kinds := []struct {
		name    string
		acquire acquirer
		parent  string // where the kind's held node is, under its path
	}{
		{"mutex", mutexAcquirer, ""},
		{"read-lock", rwAcquirer(false), ""},
		{"semaphore", semAcquirer, "/leases"},
	}
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	other := testutil.Connect(t, srv.ConnectString(), framework.WithAuth("digest", []byte("other:pw")))
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			ctx := testutil.Context(t, time.Minute)
			path := "/replaced/" + k.name
			parent := path + k.parent
			var armed, moved atomic.Bool
			moveErr := make(chan error, 1)
			var replaced atomic.Pointer[zk.Stat]
			// The move runs on the request's goroutine, before the request goes out.
			move := func(op string) {
				if op != "getData" || !armed.Load() || !moved.CompareAndSwap(false, true) {
					return
				}
				moveErr <- func() error {
					kids, _, err := other.Children(ctx, parent)
					if err != nil {
						return err
					}
					if len(kids) != 1 {
						return fmt.Errorf("not one node under %s: %v", parent, kids)
					}
					node := parent + "/" + kids[0]
					data, _, err := other.GetData(ctx, node)
					if err != nil {
						return err
					}
					if _, err := other.Transaction(ctx, framework.DeleteOp(node, -1),
						framework.CreateOp(node, data, framework.Ephemeral, zk.DigestACL(zk.PermAll, "other", "pw"))); err != nil {
						return err
					}
					st, err := other.Exists(ctx, node)
					if err != nil {
						return err
					}
					replaced.Store(st)
					return nil
				}()
			}
			victim := testutil.Connect(t, srv.ConnectString(), framework.WithRequestHook(move))
			armed.Store(true)
			release, err := k.acquire(ctx, victim, path)
			require.NoError(t, err)
			err = release(ctx)
			require.True(t, moved.Load(), "the lease did not read its node")
			require.NoError(t, <-moveErr)
			require.ErrorIs(t, err, framework.ErrLost, "the release of a lease whose node was replaced by another client's")
			st := replaced.Load()
			kids, _, err := other.Children(ctx, parent)
			require.NoError(t, err)
			require.Len(t, kids, 1, "another client's node at the lease's path was deleted by its release")
			now, err := other.Exists(ctx, parent+"/"+kids[0])
			require.NoError(t, err)
			require.NotNil(t, now)
			require.Equal(t, st.Czxid, now.Czxid, "another client's node at the lease's path was deleted by its release")
			require.NoError(t, other.Delete(ctx, parent+"/"+kids[0]))
		})
	}
}
