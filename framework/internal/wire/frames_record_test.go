package wire_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"flag"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework/internal/wire"
	"github.com/zoocurator/zoocurator/zktest"
)

var recordFrames = flag.Bool("wire.record", false,
	"record the frames a real server sends into testdata/fuzz/FuzzDecodeServerRecord")

// tap is a connection that keeps a copy of every byte the server sent.
type tap struct {
	net.Conn
	mu  sync.Mutex
	got bytes.Buffer
}

func (c *tap) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.mu.Lock()
	c.got.Write(b[:n])
	c.mu.Unlock()
	return n, err
}

// frames splits the bytes a server sent into frames, without their lengths.
func (c *tap) frames(t *testing.T) [][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out [][]byte
	b := c.got.Bytes()
	for len(b) >= 4 {
		n := int(binary.BigEndian.Uint32(b))
		require.LessOrEqual(t, 4+n, len(b), "a frame cut short")
		out = append(out, bytes.Clone(b[4:4+n]))
		b = b[4+n:]
	}
	return out
}

// The frames a real server sends for each request the package speaks, its errors and
// its watch events, written as seeds of FuzzDecodeServerRecord (run with -wire.record,
// against the server zktest starts): the fuzzer then starts from what servers send.
func TestServerFramesRecordedAsFuzzSeeds(t *testing.T) {
	if !*recordFrames {
		t.Skip("records seeds only with -wire.record")
	}
	srv := zktest.NewServer(t)
	var taps []*tap
	var mu sync.Mutex
	dialer := func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		nc, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := &tap{Conn: nc}
		mu.Lock()
		taps = append(taps, tc)
		mu.Unlock()
		return tc, nil
	}
	evs := newEvents()
	c := dial(t, srv.Addr(), wire.Config{Dialer: dialer, SessionTimeout: 10 * time.Second, Chroot: "", OnEvent: evs.on})
	ctx := testCtx(t)
	must := func(_ any, err error) { require.NoError(t, err) }
	fails := func(_ any, err error) { require.Error(t, err) }
	p := "/seeds-" + strconv.FormatInt(time.Now().UnixNano(), 36)

	must(c.Create(ctx, p, []byte("data"), openACL, wire.ModePersistent, 0))
	for _, m := range []wire.CreateMode{wire.ModeEphemeral, wire.ModePersistentSequential,
		wire.ModeEphemeralSequential, wire.ModeContainer} {
		must(c.Create(ctx, p+"/m", []byte("x"), openACL, m, 0))
		_, _ = c.Delete(ctx, p+"/m", -1)
	}
	must(c.Create(ctx, p+"/ttl", nil, openACL, wire.ModePersistentWithTTL, time.Minute))
	fails(c.Create(ctx, p, nil, openACL, wire.ModePersistent, 0)) // NodeExists
	must(c.GetData(ctx, p, true))
	must(c.Exists(ctx, p, true))
	fails(c.Exists(ctx, p+"/missing", true)) // NoNode, an exist watch
	must(c.GetChildren(ctx, p, true))
	must(c.SetData(ctx, p, []byte("changed"), -1)) // fires the data watches
	fails(c.SetData(ctx, p, nil, 999))             // BadVersion
	must(c.Create(ctx, p+"/missing", nil, openACL, wire.ModePersistent, 0))
	must(c.GetACL(ctx, p))
	must(c.SetACL(ctx, p, openACL, -1))
	must(c.Sync(ctx, p))
	must(c.Multi(ctx, wire.CreateOp{Path: p + "/a", ACL: openACL}, wire.SetDataOp{Path: p + "/a", Data: []byte("1"), Version: -1},
		wire.CheckOp{Path: p, Version: -1}))
	fails(c.Multi(ctx, wire.CreateOp{Path: p + "/b", ACL: openACL}, wire.DeleteOp{Path: p + "/nothing", Version: -1},
		wire.CheckOp{Path: p, Version: -1}))
	must(c.MultiRead(ctx, wire.GetDataOp{Path: p}, wire.GetChildrenOp{Path: p}, wire.GetDataOp{Path: p + "/nothing"}))
	must(c.AddWatch(ctx, p, wire.AddWatchPersistentRecursive))
	must(c.Create(ctx, p+"/c", nil, openACL, wire.ModeEphemeral, 0)) // a persistent watch's events
	must(c.CheckWatches(ctx, p, wire.WatcherAny))
	must(c.RemoveWatches(ctx, p, wire.WatcherAny))
	fails(c.RemoveWatches(ctx, p, wire.WatcherAny)) // NoWatcher
	must(c.GetEphemerals(ctx, p))
	must(c.GetAllChildrenNumber(ctx, p))
	must(c.WhoAmI(ctx))
	require.NoError(t, c.AddAuth(ctx, wire.Auth{Scheme: "digest", Auth: []byte("u:p")}))
	kids, err := c.GetChildren(ctx, p, false)
	require.NoError(t, err)
	for _, k := range kids.Children {
		must(c.Delete(ctx, p+"/"+k, -1))
	}
	must(c.Delete(ctx, p, -1))
	time.Sleep(4 * time.Second) // a ping (every third of the timeout) and its reply
	require.NoError(t, c.CloseSession(ctx))

	dir := filepath.Join("testdata", "fuzz", "FuzzDecodeServerRecord")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	n := 0
	for _, tc := range taps {
		for _, fr := range tc.frames(t) {
			sum := sha256.Sum256(fr)
			name := filepath.Join(dir, "server-"+hex.EncodeToString(sum[:8]))
			body := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", fr)
			require.NoError(t, os.WriteFile(name, []byte(body), 0o644))
			n++
		}
	}
	t.Logf("%d frames recorded in %s", n, dir)
}
