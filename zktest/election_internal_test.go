package zktest

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hello builds an election connection's initial message as ZooKeeper 3.8 sends it.
func hello(version, sid int64, addr string) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint64(b, uint64(version))
	b = binary.BigEndian.AppendUint64(b, uint64(sid))
	b = binary.BigEndian.AppendUint32(b, uint32(len(addr)))
	return append(b, addr...)
}

func TestRewriteElectionHello(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []byte
		want []byte
	}{
		{"v2", hello(electionProtocolV2, 1, "127.0.0.1:4001"), hello(electionProtocolV2, 1, "127.0.0.1:5999")},
		{"v1", hello(electionProtocolV1, 3, "127.0.0.1:4003"), hello(electionProtocolV1, 3, "127.0.0.1:5999")},
		{"v2 several addresses", hello(electionProtocolV2, 2, "127.0.0.1:1|127.0.0.2:2"), hello(electionProtocolV2, 2, "127.0.0.1:5999")},
		// An old peer sends its id where the version goes: nothing to rewrite.
		{"unversioned", hello(7, 7, "x"), hello(7, 7, "x")[:20]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := bytes.NewReader(append(append([]byte(nil), tc.in...), "rest"...))
			got, err := rewriteElectionHello(r, "127.0.0.1:5999")
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
			rest, _ := io.ReadAll(r)
			if tc.name == "unversioned" {
				assert.Equal(t, append(tc.in[20:], "rest"...), rest, "what follows is left to be carried as it is")
			} else {
				assert.Equal(t, "rest", string(rest))
			}
		})
	}
	_, err := rewriteElectionHello(bytes.NewReader(hello(electionProtocolV2, 1, "127.0.0.1:4001")[:25]), "a:1")
	assert.Error(t, err, "a cut-short message")
}
