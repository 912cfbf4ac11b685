package framework_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

// Close called from a state listener returns, and a Close from outside still waits for
// the listener's goroutine to end.
func TestCloseFromStateListenerReturns(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c, err := framework.New(srv.ConnectString(), framework.WithConnectionTimeout(5*time.Second))
	require.NoError(t, err)
	returned := make(chan error, 1)
	c.AddListener(func(s framework.State) {
		if s == framework.Connected {
			returned <- c.Close()
		}
	})
	require.NoError(t, c.Start())
	select {
	case err := <-returned:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Close called from a state listener did not return")
	}
	require.NoError(t, c.Close(), "Close from outside after Close from inside")
	_, err = c.Exists(context.Background(), "/")
	require.ErrorIs(t, err, framework.ErrClosed)
}

// Close called from a fn given to Go returns; a Close from outside waits for that fn.
func TestCloseFromGoFuncReturns(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c, err := framework.New(srv.ConnectString(), framework.WithConnectionTimeout(5*time.Second))
	require.NoError(t, err)
	require.NoError(t, c.Start())
	returned := make(chan error, 1)
	release := make(chan struct{})
	other := make(chan struct{})
	require.True(t, c.Go(func() {
		select {
		case <-c.Done():
		case <-time.After(30 * time.Second):
		}
		close(other)
	}))
	require.True(t, c.Go(func() {
		returned <- c.Close()
		<-release
	}))
	select {
	case err := <-returned:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("Close called from a Go func did not return")
	}
	select {
	case <-other:
	default:
		t.Fatal("Close from inside returned before the other Go func ended")
	}
	outside := make(chan struct{})
	go func() {
		_ = c.Close()
		close(outside)
	}()
	select {
	case <-outside:
		t.Fatal("Close from outside returned while a Go func still ran")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	select {
	case <-outside:
	case <-time.After(20 * time.Second):
		t.Fatal("Close from outside did not return after the Go func ended")
	}
}
