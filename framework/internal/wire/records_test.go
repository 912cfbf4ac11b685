package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// layout builds expected bytes field by field, as zookeeper.jute lays them out.
type layout []byte

func (l layout) i32(v int32) layout { return binary.BigEndian.AppendUint32(l, uint32(v)) }
func (l layout) i64(v int64) layout { return binary.BigEndian.AppendUint64(l, uint64(v)) }
func (l layout) bool(v bool) layout {
	if v {
		return append(l, 1)
	}
	return append(l, 0)
}
func (l layout) str(s string) layout  { return append(l.i32(int32(len(s))), s...) }
func (l layout) buf(b []byte) layout  { return append(l.i32(int32(len(b))), b...) }
func (l layout) raw(b ...byte) layout { return append(l, b...) }
func (l layout) stat(s zk.Stat) layout {
	return l.i64(s.Czxid).i64(s.Mzxid).i64(s.Ctime).i64(s.Mtime).i32(s.Version).i32(s.Cversion).i32(s.Aversion).i64(s.EphemeralOwner).i32(s.DataLength).i32(s.NumChildren).i64(s.Pzxid)
}
func (l layout) strs(v ...string) layout {
	l = l.i32(int32(len(v)))
	for _, s := range v {
		l = l.str(s)
	}
	return l
}

var sampleStat = zk.Stat{Czxid: 0x101, Mzxid: 0x102, Ctime: 1700000000000, Mtime: 1700000000001, Version: 3, Cversion: 4, Aversion: 5, EphemeralOwner: 0x7766, DataLength: 6, NumChildren: 7, Pzxid: 0x103}

var worldACL = []zk.ACL{{Perms: 31, Scheme: "world", ID: "anyone"}}

func encode(r request) []byte {
	e := &encoder{}
	r.encode(e)
	return e.b
}

func TestRecordsEncodeAsJuteLaysThemOut(t *testing.T) {
	tests := []struct {
		name string
		rec  request
		want layout
	}{
		{"ConnectRequest new session", &connectRequest{timeout: 10000, password: make([]byte, 16), readOnly: false},
			layout{}.i32(0).i64(0).i32(10000).i64(0).buf(make([]byte, 16)).bool(false)},
		{"ConnectRequest resume read-only", &connectRequest{lastZxidSeen: 0x55, timeout: 4000, sessionID: 0x1234, password: []byte("pw"), readOnly: true},
			layout{}.i32(0).i64(0x55).i32(4000).i64(0x1234).buf([]byte("pw")).bool(true)},
		{"RequestHeader", &requestHeader{xid: 7, opcode: opGetData}, layout{}.i32(7).i32(4)},
		{"AuthPacket", &authPacket{scheme: "digest", auth: []byte("u:p")}, layout{}.i32(0).str("digest").buf([]byte("u:p"))},
		{"ExistsRequest", &pathWatchRequest{path: "/a", watch: true}, layout{}.str("/a").bool(true)},
		{"SyncRequest", &pathRequest{path: "/a/b"}, layout{}.str("/a/b")},
		{"CreateRequest", &createRequest{path: "/n", data: []byte("d"), acl: worldACL, flags: 3},
			layout{}.str("/n").buf([]byte("d")).i32(1).i32(31).str("world").str("anyone").i32(3)},
		{"CreateRequest nil data", &createRequest{path: "/n", acl: []zk.ACL{}, flags: 0},
			layout{}.str("/n").i32(-1).i32(0).i32(0)},
		{"CreateTTLRequest", &createRequest{path: "/t", data: []byte{}, acl: worldACL, flags: 5, withTTL: true, ttl: 60000},
			layout{}.str("/t").buf(nil).i32(1).i32(31).str("world").str("anyone").i32(5).i64(60000)},
		{"DeleteRequest", &versionRequest{path: "/d", version: -1}, layout{}.str("/d").i32(-1)},
		{"SetDataRequest", &setDataRequest{path: "/s", data: []byte("xy"), version: 9}, layout{}.str("/s").buf([]byte("xy")).i32(9)},
		{"SetACLRequest", &setACLRequest{path: "/s", acl: []zk.ACL{{Perms: 1, Scheme: "digest", ID: "u:h"}}, version: 2},
			layout{}.str("/s").i32(1).i32(1).str("digest").str("u:h").i32(2)},
		{"AddWatchRequest", &modeRequest{path: "/w", mode: int32(AddWatchPersistentRecursive)}, layout{}.str("/w").i32(1)},
		{"RemoveWatchesRequest", &modeRequest{path: "/w", mode: int32(WatcherAny)}, layout{}.str("/w").i32(3)},
		{"SetWatches", &setWatchesRequest{relativeZxid: 0x10, data: []string{"/a"}, child: []string{"/b", "/c"}},
			layout{}.i64(0x10).strs("/a").strs().strs("/b", "/c")},
		{"SetWatches2", &setWatchesRequest{relativeZxid: 0x10, persistent: []string{"/p"}, recurse: []string{"/r"}, v2: true},
			layout{}.i64(0x10).strs().strs().strs().strs("/p").strs("/r")},
		{"MultiHeader", &multiHeader{typ: -1, done: true, err: -1}, layout{}.i32(-1).bool(true).i32(-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, []byte(tt.want), encode(tt.rec))
		})
	}
}

func TestMultiRequestEncodesHeadersAndDone(t *testing.T) {
	got := encode(&multiRequest{c: chroot("/app"), write: []WriteOp{
		CreateOp{Path: "/x", Data: []byte("1"), ACL: worldACL, Mode: ModeEphemeral},
		CreateOp{Path: "/c", ACL: worldACL, Mode: ModeContainer},
		CreateOp{Path: "/t", ACL: worldACL, Mode: ModePersistentWithTTL, TTL: 1500e6},
		DeleteOp{Path: "/y", Version: 2},
		SetDataOp{Path: "/z", Data: []byte("2"), Version: -1},
		CheckOp{Path: "/", Version: 0},
	}})
	acl := func(l layout) layout { return l.i32(1).i32(31).str("world").str("anyone") }
	want := layout{}.i32(15).bool(false).i32(-1).str("/app/x").buf([]byte("1"))
	want = acl(want).i32(1)
	want = want.i32(19).bool(false).i32(-1).str("/app/c").i32(-1)
	want = acl(want).i32(4)
	want = want.i32(21).bool(false).i32(-1).str("/app/t").i32(-1)
	want = acl(want).i32(5).i64(1500)
	want = want.i32(2).bool(false).i32(-1).str("/app/y").i32(2)
	want = want.i32(5).bool(false).i32(-1).str("/app/z").buf([]byte("2")).i32(-1)
	want = want.i32(13).bool(false).i32(-1).str("/app").i32(0)
	want = want.i32(-1).bool(true).i32(-1)
	assert.Equal(t, []byte(want), got)

	got = encode(&multiRequest{c: "", read: []ReadOp{GetDataOp{Path: "/a"}, GetChildrenOp{Path: "/b"}}})
	want = layout{}.i32(4).bool(false).i32(-1).str("/a").bool(false)
	want = want.i32(8).bool(false).i32(-1).str("/b").bool(false)
	want = want.i32(-1).bool(true).i32(-1)
	assert.Equal(t, []byte(want), got)
}

// decodeCase is a server record's bytes and what they decode to.
type decodeCase struct {
	name string
	in   layout
	new  func() response
	want response
	// optionalTail is how many bytes at the end may be missing (a field that older
	// servers do not send).
	optionalTail int
}

func decodeCases() []decodeCase {
	st := sampleStat
	return []decodeCase{
		{name: "ConnectResponse", in: layout{}.i32(0).i32(4000).i64(0x1234).buf([]byte("0123456789abcdef")).bool(true),
			new: func() response { return &connectResponse{} }, optionalTail: 1,
			want: &connectResponse{timeout: 4000, sessionID: 0x1234, password: []byte("0123456789abcdef"), readOnly: true}},
		{name: "ReplyHeader", in: layout{}.i32(5).i64(0x200000003).i32(-101),
			new: func() response { return &replyHeader{} }, want: &replyHeader{xid: 5, zxid: 0x200000003, err: -101}},
		{name: "WatcherEvent", in: layout{}.i32(3).i32(3).str("/n"),
			new: func() response { return &watcherEvent{} }, want: &watcherEvent{typ: 3, state: 3, path: "/n"}},
		{name: "CreateResponse", in: layout{}.str("/n0000000001"),
			new: func() response { return &pathResponse{} }, want: &pathResponse{path: "/n0000000001"}},
		{name: "Create2Response", in: layout{}.str("/n").stat(st),
			new: func() response { return &create2Response{} }, want: &create2Response{path: "/n", stat: &st}},
		{name: "ExistsResponse", in: layout{}.stat(st),
			new: func() response { return &statResponse{} }, want: &statResponse{stat: &st}},
		{name: "GetDataResponse", in: layout{}.buf([]byte("hello")).stat(st),
			new: func() response { return &getDataResponse{} }, want: &getDataResponse{data: []byte("hello"), stat: &st}},
		{name: "GetDataResponse null data", in: layout{}.i32(-1).stat(st),
			new: func() response { return &getDataResponse{} }, want: &getDataResponse{stat: &st}},
		{name: "GetChildren2Response", in: layout{}.strs("a", "bc").stat(st),
			new: func() response { return &getChildren2Response{} }, want: &getChildren2Response{children: []string{"a", "bc"}, stat: &st}},
		{name: "GetEphemeralsResponse", in: layout{}.strs("/e1"),
			new: func() response { return &stringsResponse{} }, want: &stringsResponse{list: []string{"/e1"}}},
		{name: "GetACLResponse", in: layout{}.i32(1).i32(31).str("world").str("anyone").stat(st),
			new: func() response { return &getACLResponse{} }, want: &getACLResponse{acl: worldACL, stat: &st}},
		{name: "GetAllChildrenNumberResponse", in: layout{}.i32(42),
			new: func() response { return &intResponse{} }, want: &intResponse{n: 42}},
		{name: "WhoAmIResponse", in: layout{}.i32(2).str("ip").str("127.0.0.1").str("digest").str("u"),
			new: func() response { return &whoAmIResponse{} }, want: &whoAmIResponse{info: []ClientInfo{{"ip", "127.0.0.1"}, {"digest", "u"}}}},
		{name: "MultiResponse", in: layout{}.
			i32(15).bool(false).i32(0).str("/n").stat(st).
			i32(1).bool(false).i32(0).str("/o").
			i32(5).bool(false).i32(0).stat(st).
			i32(2).bool(false).i32(0).
			i32(13).bool(false).i32(0).
			i32(-1).bool(false).i32(-101).i32(-101).
			i32(-1).bool(false).i32(0).i32(0).
			i32(-1).bool(true).i32(-1),
			new: func() response { return &multiResponse{zxid: 9} },
			want: &multiResponse{zxid: 9, results: []OpResult{
				{Path: "/n", Stat: &st}, {Path: "/o"}, {Stat: &st}, {}, {},
				{Err: &Error{Code: -101, Zxid: 9}}, {Err: ErrRolledBack}}}},
		{name: "MultiReadResponse", in: layout{}.
			i32(4).bool(false).i32(0).buf([]byte("d")).stat(st).
			i32(8).bool(false).i32(0).strs("c").
			i32(-1).bool(true).i32(-1),
			new:  func() response { return &multiResponse{} },
			want: &multiResponse{results: []OpResult{{Data: []byte("d"), Stat: &st}, {Children: []string{"c"}}}}},
	}
}

func decodeAll(in []byte, r response) error {
	d := &decoder{b: in}
	r.decode(d)
	return d.err
}

func TestRecordsDecodeAsJuteLaysThemOut(t *testing.T) {
	for _, tt := range decodeCases() {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.new()
			require.NoError(t, decodeAll(tt.in, got))
			assert.Equal(t, tt.want, got)
		})
	}
}

// Every prefix of a record, from empty to one byte short, fails with ErrMalformed and no
// panic (but for a trailing optional field).
func TestRecordsDecodeTruncatedFails(t *testing.T) {
	for _, tt := range decodeCases() {
		t.Run(tt.name, func(t *testing.T) {
			for n := 0; n < len(tt.in)-tt.optionalTail; n++ {
				err := decodeAll(tt.in[:n], tt.new())
				if !errors.Is(err, ErrMalformed) {
					t.Fatalf("%d of %d bytes: got %v, want ErrMalformed", n, len(tt.in), err)
				}
			}
		})
	}
}

func TestConnectResponseWithoutReadOnlyByteIsReadWrite(t *testing.T) {
	var r connectResponse
	require.NoError(t, decodeAll(layout{}.i32(0).i32(4000).i64(1).buf(make([]byte, 16)), &r))
	assert.False(t, r.readOnly)
	assert.Equal(t, int32(4000), r.timeout)
}

func TestDecoderRejectsBadLengths(t *testing.T) {
	tests := []struct {
		name string
		in   layout
		r    response
	}{
		{"negative string length", layout{}.i32(-2), &pathResponse{}},
		{"string longer than the frame", layout{}.i32(100).raw('a', 'b'), &pathResponse{}},
		{"buffer length MaxInt32", layout{}.i32(0x7fffffff), &getDataResponse{}},
		{"vector count beyond the bytes", layout{}.i32(1 << 30).str("a"), &stringsResponse{}},
		{"negative vector count", layout{}.i32(-5), &stringsResponse{}},
		{"ACL count beyond the bytes", layout{}.i32(1000).i32(31).str("world").str("anyone"), &getACLResponse{}},
		{"whoAmI count beyond the bytes", layout{}.i32(1 << 20), &whoAmIResponse{}},
		{"unknown multi result type", layout{}.i32(99).bool(false).i32(0), &multiResponse{}},
		{"multi without done", layout{}.i32(2).bool(false).i32(0), &multiResponse{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := decodeAll(tt.in, tt.r)
			assert.ErrorIs(t, err, ErrMalformed)
		})
	}
}

func TestReadFrameRejectsBadLengths(t *testing.T) {
	tests := []struct {
		name string
		in   layout
	}{
		{"negative", layout{}.i32(-1)},
		{"beyond the largest frame", layout{}.i32(1025)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readFrame(bytes.NewReader(tt.in), 1024)
			assert.ErrorIs(t, err, ErrMalformed)
		})
	}
	body, err := readFrame(bytes.NewReader(layout{}.i32(2).raw(7, 8)), 1024)
	require.NoError(t, err)
	assert.Equal(t, []byte{7, 8}, body)
}

// FuzzDecodeServerRecord feeds arbitrary bytes to every decoder of a server record: none
// may panic, and one that fails says ErrMalformed.
func FuzzDecodeServerRecord(f *testing.F) {
	for _, tt := range decodeCases() {
		f.Add([]byte(tt.in))
	}
	f.Add([]byte{})
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, tt := range decodeCases() {
			if err := decodeAll(in, tt.new()); err != nil && !errors.Is(err, ErrMalformed) {
				t.Fatalf("%s: %v does not wrap ErrMalformed", tt.name, err)
			}
		}
		// A whole frame through the reader's dispatch, with a request awaiting the xid
		// the frame names and an auth packet awaiting its reply.
		c := &Conn{cfg: Config{Chroot: "/c", OnEvent: func(Event) {}}}
		if len(in) >= 4 {
			c.pending = []*call{{xid: int32(binary.BigEndian.Uint32(in)), done: make(chan reply, 1)}}
		}
		c.auths = []*call{{xid: xidAuth, done: make(chan reply, 1)}}
		_ = c.dispatch(in)
	})
}
