package framework

import (
	"errors"
	"io"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/go-zookeeper/zk"

	"github.com/zoocurator/zoocurator/retry"
)

// go-zookeeper hands a request the socket's raw error when writing it fails; the
// framework must treat it as the connection loss it is (retryable), seen in CI as
// "write: broken pipe" under a dropped connection.
func TestMapErrNetworkErrorsAreConnectionLoss(t *testing.T) {
	brokenPipe := &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}
	for name, err := range map[string]error{
		"broken pipe":    brokenPipe,
		"reset":          &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)},
		"eof":            io.EOF,
		"closed network": net.ErrClosed,
	} {
		got := mapErr(err)
		if !errors.Is(got, zk.ErrConnectionClosed) || !retry.IsRetryable(got, true) {
			t.Errorf("%s: mapErr(%v) = %v, want a retryable connection loss", name, err, got)
		}
	}
	if got := mapErr(zk.ErrNoNode); got != zk.ErrNoNode {
		t.Errorf("ZooKeeper's own errors pass unchanged, got %v", got)
	}
	if got := mapErr(zk.ErrClosing); !errors.Is(got, ErrClosed) {
		t.Errorf("closing maps to ErrClosed, got %v", got)
	}
	if mapErr(nil) != nil {
		t.Error("nil stays nil")
	}
}
