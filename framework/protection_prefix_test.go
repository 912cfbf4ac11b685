package framework_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// WithProtectionPrefix names the node with the prefix given; a prefix not of the form
// _c_<uuid>- is refused.
func TestWithProtectionPrefix(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString())
	ctx := testCtx(t)
	prefix := framework.NewProtectedPrefix()
	p, err := c.Create(ctx, "/pp/n-", nil, framework.WithMode(framework.PersistentSequential),
		framework.WithProtectionPrefix(prefix), framework.WithParents())
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(p, "/pp/"+prefix+"n-"), p)
	for _, bad := range []string{"", "_c_x-", prefix[:len(prefix)-1], "x" + prefix[1:]} {
		_, err := c.Create(ctx, "/pp/m", nil, framework.WithProtectionPrefix(bad))
		require.ErrorIs(t, err, framework.ErrInvalidArgument, "prefix %q", bad)
	}
	kids, _, err := c.Children(ctx, "/pp")
	require.NoError(t, err)
	assert.Len(t, kids, 1)
}
