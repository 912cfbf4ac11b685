package zktest_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/zktest"
)

// A program's -connect given: StartStandalone starts nothing, names those servers as
// given (chroot included), and its Close leaves them running.
func TestStartStandaloneUsesGivenServers(t *testing.T) {
	real := zktest.NewServer(t)
	var notice bytes.Buffer
	srv, err := zktest.StartStandalone(context.Background(),
		zktest.UseServers(real.ConnectString()+"/app"), zktest.WithStartNotice(&notice))
	require.NoError(t, err)
	assert.Equal(t, real.ConnectString()+"/app", srv.ConnectString())
	assert.False(t, srv.Controllable())
	assert.ErrorIs(t, srv.Stop(), zktest.ErrUnsupported)
	assert.Empty(t, notice.String(), "nothing was started, so nothing is announced")
	require.NoError(t, srv.Close())
	out, err := zktest.FourLetterWord(real.Addr(), "ruok", time.Second)
	require.NoError(t, err, "Close of a used server must leave it running")
	assert.Equal(t, "imok", out)
}

// -connect empty: StartStandalone starts a server of its own, says so, and Close stops it.
func TestStartStandaloneStartsOne(t *testing.T) {
	t.Setenv("ZK_TEST_CONNECT", "")
	var notice bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := zktest.StartStandalone(ctx, zktest.UseServers(""), zktest.WithStartNotice(&notice))
	require.NoError(t, err)
	defer srv.Close()
	assert.Contains(t, notice.String(), "starting")
	out, err := zktest.FourLetterWord(srv.Addr(), "ruok", time.Second)
	require.NoError(t, err)
	assert.Equal(t, "imok", out)
	require.NoError(t, srv.Close())
	_, err = zktest.FourLetterWord(srv.Addr(), "ruok", time.Second)
	assert.Error(t, err, "Close stops a server StartStandalone started")
}

// A start whose context has ended gives up with the context's error, and starts nothing.
func TestStartStandaloneHonoursContext(t *testing.T) {
	t.Setenv("ZK_TEST_CONNECT", "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	srv, err := zktest.StartStandalone(ctx)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Nil(t, srv)
}

// StartProxyFor keeps the connect string's chroot: a client through the proxy works in it.
func TestStartProxyForKeepsChroot(t *testing.T) {
	srv := zktest.NewServer(t)
	direct, _ := connect(t, srv.ConnectString(), 10*time.Second, nil)
	_, err := direct.Create("/chrooted", nil, 0, zk.WorldACL(zk.PermAll))
	require.NoError(t, err)

	p, err := zktest.StartProxyFor(srv.ConnectString() + "/chrooted")
	require.NoError(t, err)
	defer p.Close()
	require.True(t, strings.HasSuffix(p.ConnectString(), "/chrooted"), p.ConnectString())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := framework.Connect(ctx, p.ConnectString())
	require.NoError(t, err)
	defer client.Close()
	_, err = client.Create(ctx, "/child", nil)
	require.NoError(t, err)
	ok, _, err := direct.Exists("/chrooted/child")
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Positive(t, p.Forwarded(), "the create went through the proxy")
}
