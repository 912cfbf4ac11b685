package framework_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// The doc (package framework): "Paths are validated with ZooKeeper's own rules, and data
// over the server's limit is refused, before anything is sent." WithMaxPacketSize:
// "Requests whose data and path would exceed it fail with ErrDataTooLarge before
// sending." A create carries its ACL too: a node's ACL of a few digest entries (what a
// secured deployment gives every node) makes a create whose data and path fit the limit
// a packet the server refuses by closing the connection.
func TestCreateWithLargeACLRefusedBeforeSending(t *testing.T) {
	srv := zktest.NewServer(t)
	var acl []zk.ACL
	for i := range 12 {
		acl = append(acl, zk.ACL{Perms: zk.PermRead, Scheme: "digest", ID: fmt.Sprintf("reader-%02d:%s", i, strings.Repeat("x", 28))})
	}
	acl = append(acl, zk.WorldACL(zk.PermAll)...)
	c := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithACL(acl))
	states := recordStates(c)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const path = "/big"
	n := framework.DefaultMaxPacketSize - 512 - len(path) // data and path just within the limit
	_, err := c.Create(ctx, path, make([]byte, n))
	t.Logf("create of %d bytes with an ACL of %d entries: %v; states %v", n, len(acl), err, states.get())
	if err != nil {
		assert.ErrorIs(t, err, framework.ErrDataTooLarge, "a create the server cannot take is refused before it is sent")
		assert.NotErrorIs(t, err, framework.ErrConnectionClosed, "not sent: no connection loss")
	}
	assert.NotContains(t, states.get(), framework.Suspended, "a refused request does not cost the connection")
}
