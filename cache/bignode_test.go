package cache_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/internal/testutil"
	"github.com/zoocurator/zoocurator/zktest"
)

// TestNodeOverPacketLimitIsRead: a node whose data is bigger than the cache client's
// packet limit (WithMaxPacketSize, which bounds what the client sends; written by a
// client with the default limit) is read and held like any other, once: the first build
// ends, the node is in the cache with all its data, the other children stay current, and
// the cache does not read it again and again. (The suspected endless retry of such a node
// does not happen: go-zookeeper takes replies of any size, and the limit applies to
// requests only.)
func TestNodeOverPacketLimitIsRead(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	const limit = 64 * 1024
	writer := newClient(t, srv.ConnectString())
	reader := newClient(t, srv.ConnectString(), framework.WithMaxPacketSize(limit))
	ctx := testutil.Context(t, 60*time.Second)
	const root = "/bignode"
	big := bytes.Repeat([]byte("x"), 2*limit)
	create(t, writer, root, "")
	create(t, writer, root+"/a", "a")
	_, err := writer.Create(ctx, root+"/big", big)
	require.NoError(t, err)
	create(t, writer, root+"/c", "c")
	t.Cleanup(func() { _ = writer.Delete(ctx, root, framework.WithChildren(), framework.Quietly()) })

	pc, err := cache.NewPathChildrenCache(reader, root, cache.WithStartMode(cache.PostInitializedEvent))
	require.NoError(t, err)
	r := listen(t, newRecorder(root, false), pc.AddListener)
	require.NoError(t, pc.Start(ctx))
	t.Cleanup(func() { _ = pc.Close() })

	evs := untilInitialized(t, r)
	var got []string
	for _, ev := range evs {
		got = append(got, ev.String())
	}
	assert.ElementsMatch(t, []string{"CHILD_ADDED " + root + "/a", "CHILD_ADDED " + root + "/big", "CHILD_ADDED " + root + "/c"}, got)
	d, ok := pc.Get(root + "/big")
	require.True(t, ok)
	assert.True(t, bytes.Equal(big, d.Data), "all %d bytes held", len(big))

	// The rest stays current, and the big node is not read again meanwhile: the requests
	// between Initialized and the last event are the ones the two changes need.
	before := reader.Requests()
	set(t, writer, root+"/a", "a2")
	r.skipUntil(t, "CHILD_UPDATED "+root+"/a")
	create(t, writer, root+"/d", "d")
	r.skipUntil(t, "CHILD_ADDED "+root+"/d")
	d, ok = pc.Get(root + "/a")
	require.True(t, ok)
	assert.Equal(t, "a2", string(d.Data))
	assert.LessOrEqual(t, reader.Requests()-before, uint64(8), "requests for two changes")
	r.checkConsistent(t)
}
