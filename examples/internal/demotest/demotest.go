// Package demotest runs an example program's run function the way every example's test
// does: against a fresh ZooKeeper, with a goroutine-leak check, returning what it printed.
package demotest

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

// Run runs run against a new test server within timeout, fails the test if it returns an
// error, logs its output and returns it.
func Run(t *testing.T, run func(ctx context.Context, connect string, out io.Writer) error, timeout time.Duration) string {
	t.Helper()
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out bytes.Buffer
	if err := run(ctx, srv.ConnectString(), &out); err != nil {
		t.Fatalf("run: %v\noutput so far:\n%s", err, out.String())
	}
	t.Log("\n" + out.String())
	return out.String()
}
