package framework_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
)

// Connect with a context without deadline gives up after the connection timeout, naming
// the servers and the timeout.
func TestConnectWithoutDeadlineGivesUp(t *testing.T) {
	leakcheck.Check(t)
	// A port nobody listens on: take a free one and close it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())

	done := make(chan error, 1)
	go func() {
		c, err := framework.Connect(context.Background(), addr, framework.WithConnectionTimeout(500*time.Millisecond))
		if c != nil {
			c.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		require.Error(t, err)
		assert.ErrorIs(t, err, framework.ErrNotConnected)
		assert.Contains(t, err.Error(), addr)
		assert.Contains(t, err.Error(), "500ms")
	case <-time.After(30 * time.Second):
		t.Fatal("Connect(context.Background()) to a dead address did not give up")
	}
}
