package framework_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A chroot is checked by ZooKeeper's path rules when the client is made, as ZooKeeper's
// own client checks it: one that would put an empty node name or a trailing '/' before
// every path is refused with an error that says it is the chroot.
func TestNewValidatesChroot(t *testing.T) {
	for _, connect := range []string{
		"127.0.0.1:2181//",
		"127.0.0.1:2181///",
		"127.0.0.1:2181//a",
		"127.0.0.1:2181/a//b",
		"127.0.0.1:2181/a/",
		"127.0.0.1:2181/a/./b",
	} {
		c, err := framework.New(connect)
		require.Error(t, err, "connect %q", connect)
		assert.Nil(t, c)
		assert.ErrorIs(t, err, framework.ErrInvalidPath, "connect %q", connect)
		assert.Contains(t, err.Error(), "chroot", "connect %q", connect)
	}
}

// A connect string that ends with a lone '/' has no chroot, as in ZooKeeper's client:
// paths go out as they are.
func TestChrootOfSlashAloneIsNone(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testCtx(t)
	c := testutil.ConnectFailFast(t, srv.ConnectString()+"/")
	p, err := c.Create(ctx, "/chroot-none", []byte("d"))
	require.NoError(t, err)
	assert.Equal(t, "/chroot-none", p)
	plain := testutil.ConnectFailFast(t, srv.ConnectString())
	data, _, err := plain.GetData(ctx, "/chroot-none")
	require.NoError(t, err)
	assert.Equal(t, "d", string(data))
}
