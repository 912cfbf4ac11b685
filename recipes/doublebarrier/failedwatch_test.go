package doublebarrier_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// An Enter that fails (its deadline passes before memberQty members are there) leaves no
// watch behind on the server once its member node is gone: no session watches anything
// under the barrier's path.
func TestFailedEnterLeavesNoWatch(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/failedwatch/barrier"
	d := newMember(t, c, path, 2)
	ectx, cancel := context.WithTimeout(ctx, time.Second)
	err := d.Enter(ectx)
	cancel()
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.NoError(t, c.WaitGuaranteedDeletes(ctx))
	require.Empty(t, testutil.Children(t, srv.ConnectString(), path), "the member node is left")
	// The member's node is gone (its delete was answered), so any watch it fired is gone
	// from the server too: what wchc lists now stays.
	out, err := zktest.FourLetterWord(srv.Addr(), "wchc", 5*time.Second)
	require.NoError(t, err)
	var left []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), path+"/") || strings.TrimSpace(line) == path {
			left = append(left, strings.TrimSpace(line))
		}
	}
	require.Empty(t, left, "the failed Enter left watches on the server: %q", out)
}
