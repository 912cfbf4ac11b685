package mutex_test

import (
	"context"
	"net"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/locks"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/zktest"
)

// curatorDefaultData is what Curator 5.4 writes into a node created without data:
// InetAddress.getLocalHost().getHostAddress() — the host name's first address, IPv4
// preferred — or nothing when the name does not resolve.
func curatorDefaultData(t *testing.T) string {
	host, err := os.Hostname()
	require.NoError(t, err)
	addrs, err := net.LookupHost(host)
	if err != nil || len(addrs) == 0 {
		return ""
	}
	for _, a := range addrs {
		if ip := net.ParseIP(a); ip != nil && ip.To4() != nil {
			return a
		}
	}
	return addrs[0]
}

// TestDefaultNodeDataIsCuratorsDefault: lock nodes carry the host's address, as Curator's
// do by default, so that Go and Java holders look alike; WithNodeData overrides it.
func TestDefaultNodeDataIsCuratorsDefault(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := context.Background()
	c := testutil.Connect(t, srv.ConnectString())
	want := curatorDefaultData(t)
	require.NotEmpty(t, want, "the test host's name resolves")
	// The address is looked up in the background: wait for that lookup to end.
	got, err := locks.WaitDefaultNodeData(testutil.Context(t, 20*time.Second))
	require.NoError(t, err)
	require.Equal(t, want, string(got))
	for _, tc := range []struct {
		opts []mutex.Option
		want string
	}{
		{nil, want},
		{[]mutex.Option{mutex.WithNodeData([]byte("mine"))}, "mine"},
		{[]mutex.Option{mutex.WithNodeData([]byte{})}, ""},
	} {
		m := newMutex(t, c, "/locks/data", tc.opts...)
		l, err := m.Acquire(ctx)
		require.NoError(t, err)
		data, _, err := c.GetData(ctx, l.Node())
		require.NoError(t, err)
		assert.Equal(t, tc.want, string(data))
		require.NoError(t, l.Release(ctx))
	}
	testutil.RequireNoChildren(t, srv.ConnectString(), "/locks/data")
}
