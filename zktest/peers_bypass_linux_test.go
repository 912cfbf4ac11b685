package zktest

import (
	"bufio"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// tcpConn is one established TCP connection as /proc/net/tcp* lists it.
type tcpConn struct {
	local, remote string // "127.0.0.1:port"
	inode         string
}

// procAddr decodes /proc/net/tcp's "0100007F:1F90" (and tcp6's IPv4-mapped form).
func procAddr(s string) (string, error) {
	hostHex, portHex, ok := strings.Cut(s, ":")
	if !ok {
		return "", fmt.Errorf("bad address %q", s)
	}
	port, err := strconv.ParseUint(portHex, 16, 16)
	if err != nil {
		return "", err
	}
	raw, err := hex.DecodeString(hostHex)
	if err != nil {
		return "", err
	}
	// The kernel prints each 32-bit word in host (little-endian) order.
	for i := 0; i+4 <= len(raw); i += 4 {
		raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
	}
	ip := net.IP(raw)
	if v4 := ip.To4(); v4 != nil {
		ip = v4
	}
	return net.JoinHostPort(ip.String(), strconv.FormatUint(port, 10)), nil
}

func establishedConns(t *testing.T) []tcpConn {
	t.Helper()
	var out []tcpConn
	for _, f := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		fh, err := os.Open(f)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(fh)
		sc.Scan() // header
		for sc.Scan() {
			fields := strings.Fields(sc.Text())
			if len(fields) < 10 || fields[3] != "01" { // 01: ESTABLISHED
				continue
			}
			l, err1 := procAddr(fields[1])
			r, err2 := procAddr(fields[2])
			if err1 != nil || err2 != nil {
				continue
			}
			out = append(out, tcpConn{local: l, remote: r, inode: fields[9]})
		}
		fh.Close()
	}
	return out
}

// ownSockets returns the inodes of this process's sockets.
func ownSockets(t *testing.T) map[string]bool {
	t.Helper()
	own := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	for _, fd := range fds {
		l, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(l, "socket:[") {
			own[strings.TrimSuffix(strings.TrimPrefix(l, "socket:["), "]")] = true
		}
	}
	return own
}

// bypasses lists the connections to a member's real quorum or election port whose other
// end is not one of the proxies of this process: traffic between members that Isolate
// and Partition cannot cut.
func (e *Ensemble) bypasses(t *testing.T) []string {
	t.Helper()
	real := map[string]bool{}
	for i := range e.peers {
		for j := range e.peers[i] {
			if i != j {
				for _, tg := range e.peers[i][j].targets {
					real[tg] = true
				}
			}
		}
	}
	conns := establishedConns(t)
	byLocal := map[string]tcpConn{}
	for _, c := range conns {
		byLocal[c.local] = c
	}
	own := ownSockets(t)
	var bad []string
	for _, c := range conns {
		if !real[c.local] {
			continue
		}
		peer, ok := byLocal[c.remote]
		if ok && !own[peer.inode] {
			bad = append(bad, fmt.Sprintf("%s <- %s", c.local, c.remote))
		}
	}
	return bad
}

// TestPeerTrafficOnlyThroughProxies: with WithPeerProxies, no connection between members
// goes around the proxies, also after a cut and a heal. A member connected to by a member
// of lower id connects back to the address announced in the connection's first message —
// before the proxies rewrote it, the member's own port: such a connection was never cut,
// and an isolated leader kept winning the election it could not lead (the followers took
// 15–30 s to elect one of their own, more than 90 s in stressed runs). Before the fix
// every run here found such a connection ("m3 -> m1"-style pairs listed below).
func TestPeerTrafficOnlyThroughProxies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an ensemble")
	}
	e := NewEnsemble(t, 3, WithPeerProxies())
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	leader, err := e.WaitLeader(ctx)
	require.NoError(t, err)
	require.Empty(t, e.bypasses(t), "connections between members around the proxies after start")

	require.NoError(t, e.Isolate(leader))
	require.Eventually(t, func() bool {
		i, err := e.Leader()
		return err == nil && i != leader
	}, 60*time.Second, 50*time.Millisecond, "a leader among the followers")
	require.NoError(t, e.HealPeers())
	_, err = e.WaitLeader(ctx)
	require.NoError(t, err)
	// Every member answers srvr once it serves: by then its peers have connected.
	for i := range e.members {
		require.Eventually(t, func() bool { _, err := Mode(e.Addr(i)); return err == nil }, 60*time.Second, 50*time.Millisecond)
	}
	require.Empty(t, e.bypasses(t), "connections between members around the proxies after a heal")
}
