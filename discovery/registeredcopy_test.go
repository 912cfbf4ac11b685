package discovery_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
)

// Registered "returns copies of the instances registered": neither the caller of Register
// changing the instance it gave (a payload's map) nor a caller changing what Registered
// handed out changes what the next caller of Registered gets.
func TestRegisteredInstancesAreCopies(t *testing.T) {
	leakcheck.Check(t)
	connect := shared(t)
	c := testutil.Connect(t, connect)
	ctx := testutil.Context(t, 60*time.Second)
	d, err := discovery.New[details](c, "/disc/registeredcopy")
	require.NoError(t, err)
	defer d.Close()
	inst := newInstance(t, "svc", "x", 1)
	require.NoError(t, d.Register(ctx, inst))

	inst.Payload.Metadata["k"] = "changed by the registering caller"
	got := d.Registered()
	require.Len(t, got, 1)
	assert.Equal(t, "v", got[0].Payload.Metadata["k"], "Registered shows a change the caller made to the instance after Register")
	got[0].Payload.Metadata["k"] = "changed by a caller of Registered"
	again := d.Registered()
	require.Len(t, again, 1)
	assert.Equal(t, "v", again[0].Payload.Metadata["k"], "Registered shows a change a caller made to what it got")
}
