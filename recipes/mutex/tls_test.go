package mutex_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestMutexOverTLS: two clients speak mutual TLS to a secure client port, one through a
// proxy. The waiter gets the lock when the holder releases it (the watch on the node
// before its own fires over TLS); the holder behind the proxy keeps its lease across a
// dropped connection (a new TLS handshake, the same session; SessionErrorPolicy: a lease
// ends with its session, not on Suspended); nothing is left.
func TestMutexOverTLS(t *testing.T) {
	leakcheck.Check(t)
	srv, m := zktest.NewTLSServer(t, zktest.RequireClientCert())
	proxy := zktest.NewRawProxy(t, srv.SecureConnectString())
	a := testutil.Connect(t, srv.SecureConnectString(), framework.WithTLS(m.ClientConfig()), framework.WithDialer(proxy.Dialer()),
		framework.WithErrorPolicy(framework.SessionErrorPolicy)) // a lease ends with the session, not on Suspended
	b := testutil.Connect(t, srv.SecureConnectString(), framework.WithTLS(m.ClientConfig()))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	ma, err := mutex.New(a, "/tls/lock")
	require.NoError(t, err)
	mb, err := mutex.New(b, "/tls/lock")
	require.NoError(t, err)

	la, err := ma.Acquire(ctx)
	require.NoError(t, err)
	got := make(chan *mutex.Lease, 1)
	errs := make(chan error, 1)
	go func() {
		l, err := mb.Acquire(ctx)
		if err != nil {
			errs <- err
			return
		}
		got <- l
	}()
	// The waiter's node is there before the holder's connection drops.
	require.Eventually(t, func() bool {
		children, err := zktest.Children(ctx, srv.ConnectString(), "/tls/lock")
		return err == nil && len(children) == 2
	}, 30*time.Second, 20*time.Millisecond)

	sid := a.SessionID()
	proxy.DropConnections()
	_, err = a.Exists(ctx, "/tls/lock") // answered over a new TLS connection
	require.NoError(t, err)
	require.Equal(t, sid, a.SessionID(), "the session survives the dropped connection")
	select {
	case <-la.Done():
		t.Fatal("the lease ended after a dropped connection")
	default:
	}
	select {
	case l := <-got:
		t.Fatalf("the waiter got the lock (%s) while the holder holds it", l.Node())
	case err := <-errs:
		t.Fatal(err)
	default:
	}

	require.NoError(t, la.Release(ctx))
	var lb *mutex.Lease
	select {
	case lb = <-got:
	case err := <-errs:
		t.Fatal(err)
	case <-ctx.Done():
		t.Fatal("the waiter did not get the lock after the release")
	}
	require.NoError(t, lb.Release(ctx))
	children, err := zktest.Children(ctx, srv.ConnectString(), "/tls/lock")
	require.NoError(t, err)
	require.Empty(t, children)
}
