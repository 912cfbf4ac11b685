package doublebarrier_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// A member may not read the node of a peer whose ACL denies it (Curator's Leave watches
// it with exists, which needs no permission): its Leave still waits for that peer and
// returns once it has gone. The peer b's member node denies reading to anyone but b; a makes the
// barrier's node first, so that both may list it. b leaves only once a has looked at b's
// node (the observer sees a's answered read of it), so that a's Leave must wait on it.
func TestLeaveWaitsForMemberItMayNotRead(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	ctx := testutil.Context(t, 60*time.Second)
	const path = "/unreadable/barrier"
	looked := make(chan struct{})
	var bNode string
	var once sync.Once
	ac := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithRequestObserver(func(r framework.RequestInfo) {
		if (r.Op == "exists" || r.Op == "getData") && bNode != "" && r.Path == bNode {
			once.Do(func() { close(looked) })
		}
	}))
	bc := testutil.ConnectFailFast(t, srv.ConnectString(), framework.WithAuth("digest", []byte("b:secret")),
		framework.WithACLProvider(memberACL{}))
	a := newMember(t, ac, path, 2)
	b := newMember(t, bc, path, 2)
	require.True(t, memberRE.MatchString(b.Node()[len(path)+1:]))
	bNode = b.Node()

	entered := make(chan error, 1)
	go func() { entered <- a.Enter(ctx) }()
	waitChildren(t, srv.ConnectString(), path, 1)
	require.NoError(t, b.Enter(ctx))
	require.NoError(t, <-entered)

	left := make(chan error, 1)
	go func() { left <- a.Leave(ctx) }()
	select {
	case <-looked:
	case err := <-left:
		require.NoError(t, err, "a's Leave failed on b's node, which it may not read")
		t.Fatal("a's Leave returned while b was in")
	case <-ctx.Done():
		t.Fatal("a's Leave did not look at b's node")
	}
	require.NoError(t, b.Leave(ctx))
	require.NoError(t, <-left, "a's Leave failed on b's node, which it may not read")
	assertNoMembers(t, srv.ConnectString(), path, ac, bc)
}

// memberACL denies reading a member node (a bare UUID name) to anyone but the creator;
// other nodes are open to all.
type memberACL struct{}

func (memberACL) ACLForPath(p string) []zk.ACL {
	if memberRE.MatchString(p[strings.LastIndex(p, "/")+1:]) {
		return []zk.ACL{
			{Perms: zk.PermAll &^ zk.PermRead, Scheme: "world", ID: "anyone"},
			{Perms: zk.PermAll, Scheme: "auth", ID: ""},
		}
	}
	return zk.WorldACL(zk.PermAll)
}
