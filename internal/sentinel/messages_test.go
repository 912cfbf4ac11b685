package sentinel_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/recipes/barrier"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/recipes/groupmember"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/recipes/multilock"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/recipes/queue"
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
	"github.com/zoocurator/zoocurator/retry"
)

// unstarted is a client that is never started: constructors validate their arguments
// without I/O.
func unstarted(t *testing.T) *framework.Client {
	t.Helper()
	c, err := framework.New("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestArgumentErrorsHaveOnePrefix checks every package's argument errors: they match
// framework.ErrInvalidArgument and say whose argument it was once, "leader: invalid
// argument: empty participant id", never "leader: framework: invalid argument: ...".
func TestArgumentErrorsHaveOnePrefix(t *testing.T) {
	c := unstarted(t)
	ctx := context.Background()
	d, err := discovery.New[string](c, "/services")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		pkg  string
		name string
		call func() error
	}{
		{"framework", "empty connect string", func() error { _, err := framework.New(" "); return err }},
		{"framework", "zero session timeout", func() error {
			_, err := framework.New("127.0.0.1:1", framework.WithSessionTimeout(0))
			return err
		}},
		{"framework", "bad namespace", func() error { _, err := framework.New("127.0.0.1:1", framework.WithNamespace("a//b")); return err }},
		{"framework", "delete the root", func() error { return c.Delete(ctx, "/") }},
		{"framework", "bad path", func() error { _, err := c.Create(ctx, "nope", nil); return err }},
		{"retry", "zero base sleep", func() error { _, err := retry.NewExponentialBackoff(0, 3); return err }},
		{"retry", "nil operation", func() error { return retry.Do(ctx, retry.Default(), nil) }},
		{"cache", "bad path", func() error { _, err := cache.NewNodeCache(c, "nope"); return err }},
		{"discovery", "nil client", func() error { _, err := discovery.New[string](nil, "/s"); return err }},
		{"discovery", "bad name", func() error { _, err := discovery.NewInstance("a/b", ""); return err }},
		{"discovery", "zero down-instance policy", func() error {
			_, err := discovery.NewProvider(d, "svc", discovery.WithDownInstancePolicy(discovery.DownInstancePolicy{}))
			return err
		}},
		{"atomic", "nil client", func() error { _, err := atomic.NewLong(nil, "/a"); return err }},
		{"atomic", "bad path", func() error { _, err := atomic.NewLong(c, "nope"); return err }},
		{"barrier", "nil client", func() error { _, err := barrier.New(nil, "/b"); return err }},
		{"barrier", "bad path", func() error { _, err := barrier.New(c, "nope"); return err }},
		{"doublebarrier", "no members", func() error { _, err := doublebarrier.New(c, "/b", 0); return err }},
		{"groupmember", "nil client", func() error { _, err := groupmember.New(nil, "/g", "m", nil); return err }},
		{"groupmember", "bad id", func() error { _, err := groupmember.New(c, "/g", "a/b", nil); return err }},
		{"leader", "empty participant id", func() error { _, err := leader.NewLatch(c, "/e", ""); return err }},
		{"leader", "bad path", func() error { _, err := leader.NewLatch(c, "nope", "id"); return err }},
		{"leader", "observe with a nil client", func() error { _, err := leader.Observe(ctx, nil, "/e"); return err }},
		{"leader", "nil leadership function", func() error { _, err := leader.NewSelector(c, "/e", "id", nil); return err }},
		{"multilock", "no locks", func() error { _, err := multilock.New(); return err }},
		{"multilock", "nil lock", func() error { _, err := multilock.New(nil); return err }},
		{"mutex", "nil client", func() error { _, err := mutex.New(nil, "/m"); return err }},
		{"mutex", "bad path", func() error { _, err := mutex.New(c, "nope"); return err }},
		{"persistentnode", "nil client", func() error { _, err := persistentnode.New(nil, "/p", nil); return err }},
		{"persistentnode", "bad TTL", func() error { _, err := persistentnode.NewTTL(c, "/p", 0, nil); return err }},
		{"queue", "nil client", func() error { _, err := queue.New[string](nil, "/q", queue.String{}); return err }},
		{"queue", "nil serializer", func() error { _, err := queue.New[string](c, "/q", nil); return err }},
		{"rwlock", "bad path", func() error { _, err := rwlock.New(c, "nope"); return err }},
		{"semaphore", "no leases", func() error { _, err := semaphore.New(c, "/s", 0); return err }},
		{"sharedcount", "nil client", func() error { _, err := sharedcount.New(nil, "/c", 0); return err }},
		{"sharedcount", "bad path", func() error { _, err := sharedcount.New(c, "nope", 0); return err }},
	}
	for _, tc := range cases {
		err := tc.call()
		what := tc.pkg + ": " + tc.name
		if err == nil {
			t.Errorf("%s: no error", what)
			continue
		}
		if !errors.Is(err, framework.ErrInvalidArgument) {
			t.Errorf("%s: %q does not match framework.ErrInvalidArgument", what, err)
		}
		if !strings.HasPrefix(err.Error(), tc.pkg+": ") {
			t.Errorf("%s: %q does not start with %q", what, err, tc.pkg+": ")
		}
		checkOnePrefix(t, what, tc.pkg, err.Error())
	}
}

// TestDownInstancePolicyIsAnArgumentError: a zero policy involves no instance.
func TestDownInstancePolicyIsAnArgumentError(t *testing.T) {
	c := unstarted(t)
	d, err := discovery.New[string](c, "/services")
	if err != nil {
		t.Fatal(err)
	}
	_, err = discovery.NewProvider(d, "svc", discovery.WithDownInstancePolicy(discovery.DownInstancePolicy{}))
	if errors.Is(err, discovery.ErrInvalidInstance) || !errors.Is(err, framework.ErrInvalidArgument) {
		t.Fatalf("zero down-instance policy: %v; want an invalid argument, not an invalid instance", err)
	}
}

// TestConnectRefusedSaysRefused: a connect string naming a port nobody listens on gives
// an error that says the connection was refused (the last dial error), names the
// server and the wait once, and matches ErrNotConnected and ECONNREFUSED.
func TestConnectRefusedSaysRefused(t *testing.T) {
	_, err := framework.Connect(context.Background(), "127.0.0.1:1", framework.WithConnectionTimeout(time.Second))
	if err == nil {
		t.Fatal("connected to 127.0.0.1:1")
	}
	msg := err.Error()
	if !errors.Is(err, framework.ErrNotConnected) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("%q: errors.Is(ErrNotConnected) = %v, errors.Is(ECONNREFUSED) = %v, want both", msg,
			errors.Is(err, framework.ErrNotConnected), errors.Is(err, syscall.ECONNREFUSED))
	}
	if !strings.Contains(msg, "refused") || !strings.Contains(msg, "127.0.0.1:1") {
		t.Errorf("%q does not say that 127.0.0.1:1 refused the connection", msg)
	}
	if n := strings.Count(msg, "framework: "); n != 1 {
		t.Errorf("%q says \"framework: \" %d times, want once", msg, n)
	}
	checkOnePrefix(t, "connect", "framework", msg)
}

// TestOperationOnClosedClientHasOnePrefix: an operation's error names the operation and
// the path, and the framework once.
func TestOperationOnClosedClientHasOnePrefix(t *testing.T) {
	c, err := framework.New("127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	_, err = c.Create(context.Background(), "/x", nil)
	if !errors.Is(err, framework.ErrClosed) {
		t.Fatalf("create on a closed client: %v, want ErrClosed", err)
	}
	if n := strings.Count(err.Error(), "framework: "); n != 1 {
		t.Errorf("%q says \"framework: \" %d times, want once", err, n)
	}
}
