package zktest

import (
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRawProxyWaitsForAPeerNotYetListening: a learner that connects to its new leader a
// moment before the leader listens must be carried through once it does, not hung up on
// (it would start an election anew while the leader waits initLimit for it). Before the
// fix the proxy closed the accepted connection at once and the read below saw EOF.
func TestRawProxyWaitsForAPeerNotYetListening(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	target := ln.Addr().String()
	require.NoError(t, ln.Close()) // refused until listened on again below

	p, err := startProxy(true, target)
	require.NoError(t, err)
	defer p.Close()
	c, err := net.Dial("tcp", p.listeners[0].Addr().String())
	require.NoError(t, err)
	defer c.Close()
	_, err = c.Write([]byte("hi"))
	require.NoError(t, err)

	ln, err = net.Listen("tcp", target)
	require.NoError(t, err)
	defer ln.Close()
	s, err := ln.Accept()
	require.NoError(t, err)
	defer s.Close()
	buf := make([]byte, 2)
	require.NoError(t, s.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = io.ReadFull(s, buf)
	require.NoError(t, err)
	assert.Equal(t, "hi", string(buf))
	_, err = s.Write([]byte("yo"))
	require.NoError(t, err)
	require.NoError(t, c.SetReadDeadline(time.Now().Add(30*time.Second)))
	_, err = io.ReadFull(c, buf)
	require.NoError(t, err, "the client's connection was carried through, not closed")
	assert.Equal(t, "yo", string(buf))
}
