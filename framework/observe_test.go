package framework_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestRequestObserverSeesOpPathDurationAndError checks that a request observer is told
// each request's name, its path as the caller sees it (namespace stripped), a duration
// and the error, and that a state listener given as an option hears the first Connected.
func TestRequestObserverSeesOpPathDurationAndError(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	var (
		mu    sync.Mutex
		infos []framework.RequestInfo
	)
	states := make(chan framework.State, 16)
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithNamespace("obs"),
		framework.WithRequestObserver(func(ri framework.RequestInfo) {
			mu.Lock()
			infos = append(infos, ri)
			mu.Unlock()
		}),
		framework.WithStateListener(func(s framework.State) { states <- s }))
	select {
	case s := <-states:
		assert.Equal(t, framework.Connected, s)
	case <-ctx.Done():
		t.Fatal("the state listener given as an option never heard Connected")
	}

	_, err := c.Create(ctx, "/a", []byte("x"), framework.WithParents())
	require.NoError(t, err)
	_, _, err = c.GetData(ctx, "/missing")
	require.ErrorIs(t, err, zk.ErrNoNode)
	require.NoError(t, c.Delete(ctx, "/a"))

	mu.Lock()
	got := append([]framework.RequestInfo(nil), infos...)
	mu.Unlock()
	find := func(op, path string) *framework.RequestInfo {
		for i := len(got) - 1; i >= 0; i-- { // the last: a create may fail first for a missing parent
			if got[i].Op == op && got[i].Path == path {
				return &got[i]
			}
		}
		return nil
	}
	created := find("create", "/a")
	require.NotNil(t, created, "no create /a in %+v", got)
	assert.NoError(t, created.Err)
	assert.Greater(t, created.Duration, time.Duration(0))
	missing := find("getData", "/missing")
	require.NotNil(t, missing, "no getData /missing in %+v", got)
	assert.True(t, errors.Is(missing.Err, zk.ErrNoNode), "err %v", missing.Err)
	require.NotNil(t, find("delete", "/a"), "no delete /a in %+v", got)
	assert.Equal(t, uint64(len(got)), c.Requests(), "the observer sees every request the client counts")

	// A context ended before the call sends nothing, and nothing is observed.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	_, _, err = c.GetData(cctx, "/a")
	require.ErrorIs(t, err, context.Canceled)
	mu.Lock()
	assert.Len(t, infos, len(got))
	mu.Unlock()

	_, err = framework.New(srv.ConnectString(), framework.WithRequestObserver(nil))
	require.ErrorIs(t, err, framework.ErrInvalidArgument)
	_, err = framework.New(srv.ConnectString(), framework.WithStateListener(nil))
	require.ErrorIs(t, err, framework.ErrInvalidArgument)
}

// lockedBuffer is a bytes.Buffer safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestLogLinesUseAttributes checks that the client's log lines carry what they are about
// in slog attributes, not in a "framework: " prefix inside the message.
func TestLogLinesUseAttributes(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	var buf lockedBuffer
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithLogger(logger))
	require.NoError(t, c.Close())
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	sawState := false
	for _, line := range lines {
		var rec map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &rec), line)
		msg, _ := rec["msg"].(string)
		if rec["component"] != "go-zookeeper" { // go-zookeeper's own lines are passed on as they are
			assert.NotRegexp(t, `^[a-z-]+: `, msg, "a package prefix in the message: %s", line)
		}
		assert.NotEmpty(t, rec["component"], "no component attribute: %s", line)
		if msg == "connection state" {
			sawState = true
			assert.Equal(t, "framework", rec["component"])
			assert.NotEmpty(t, rec["state"])
		}
	}
	assert.True(t, sawState, "no connection state line in %v", lines)
}

func TestErrorCode(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{nil, "OK"},
		{zk.ErrNoNode, "NONODE"},
		{fmt.Errorf("framework: create /a: %w", zk.ErrNodeExists), "NODEEXISTS"},
		{framework.ErrNotConnected, "CONNECTIONLOSS"},
		{zk.ErrConnectionClosed, "CONNECTIONLOSS"},
		{zk.ErrSessionExpired, "SESSIONEXPIRED"},
		{framework.ErrClosed, "CLOSED"},
		{fmt.Errorf("x: %w", context.DeadlineExceeded), "DEADLINEEXCEEDED"},
		{errors.New("something"), "OTHER"},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, framework.ErrorCode(c.err), "%v", c.err)
	}
}
