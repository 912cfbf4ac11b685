package zktest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
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

// A port in use is refused before a server is started, with ErrPortInUse.
func TestStartStandaloneWithPortRefusesPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv, err := zktest.StartStandalone(ctx, zktest.WithPort(port))
	require.ErrorIs(t, err, zktest.ErrPortInUse)
	assert.Nil(t, srv)
	assert.Contains(t, err.Error(), fmt.Sprintf("127.0.0.1:%d", port))
}

// A server on a data directory leaves it at Close; one started again on it, on the same
// port, finds its nodes. ZK_TEST_CONNECT does not replace a server asked for a place.
func TestStartStandaloneWithDataDirKeepsData(t *testing.T) {
	t.Setenv("ZK_TEST_CONNECT", "127.0.0.1:1")
	dir := filepath.Join(t.TempDir(), "zk")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	srv, err := zktest.StartStandalone(ctx, zktest.WithDataDir(dir))
	if errors.Is(err, zktest.ErrUnavailable) && testing.Short() {
		t.Skipf("%v (skipped under -short)", err)
	}
	require.NoError(t, err)
	defer srv.Close()
	require.True(t, srv.Controllable(), "a server asked for a data directory is started here")
	c, err := framework.Connect(ctx, srv.ConnectString())
	require.NoError(t, err)
	_, err = c.Create(ctx, "/kept", []byte("yes"))
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, srv.Close())
	assert.DirExists(t, filepath.Join(dir, "data", "version-2"))

	port := srv.Addr()[strings.LastIndexByte(srv.Addr(), ':')+1:]
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	again, err := zktest.StartStandalone(ctx, zktest.WithDataDir(dir), zktest.WithPort(p))
	require.NoError(t, err)
	defer again.Close()
	assert.Equal(t, srv.Addr(), again.Addr())
	c, err = framework.Connect(ctx, again.ConnectString())
	require.NoError(t, err)
	defer c.Close()
	data, _, err := c.GetData(ctx, "/kept")
	require.NoError(t, err)
	assert.Equal(t, "yes", string(data))
}

func TestStartStandaloneRefusesPlaceWithUseServers(t *testing.T) {
	_, err := zktest.StartStandalone(context.Background(), zktest.UseServers("127.0.0.1:1"), zktest.WithPort(2181))
	require.Error(t, err)
	_, err = zktest.StartStandalone(context.Background(), zktest.WithPort(70000))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "70000")
}
