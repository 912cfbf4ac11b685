package zktest

import (
	"fmt"
	"net"
)

// listenPort is the port a proxy listener listens on.
func listenPort(ln net.Listener) int { return ln.Addr().(*net.TCPAddr).Port }

// peerProxies returns the peer proxies after checking that the ensemble has them and is
// open, and that every index names a member.
func (e *Ensemble) peerProxies(members ...int) ([][]*Proxy, error) {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if e.peers == nil {
		return nil, fmt.Errorf("%w: the ensemble was started without WithPeerProxies", ErrUnsupported)
	}
	for _, i := range members {
		if i < 0 || i >= len(e.peers) {
			return nil, fmt.Errorf("zktest: no member %d in an ensemble of %d", i, len(e.peers))
		}
	}
	return e.peers, nil
}

// cutOneWay holds the bytes that member from sends to member to, on every connection
// between them: those from opened (through peers[from][to], client to server) and those
// to opened (through peers[to][from], server to client).
func cutOneWay(peers [][]*Proxy, from, to int) {
	peers[from][to].StallToServers()
	peers[to][from].StallToClients()
}

// Isolate cuts member i off from every other member, in both directions, while clients
// still reach every member's client port: the rest elect a leader among themselves if they
// are a majority, and member i, without a quorum, stops serving its clients (it closes
// their connections and answers no new session) until HealPeers. It needs
// WithPeerProxies.
//
// # What a cut is
//
// A cut is a black hole, not a reset: bytes on the links already open between the
// members are held by the proxies (and delivered after HealPeers, if both ends still have
// the connection open), so a member learns of the cut only from its peers' silence, by its
// own timeouts (syncLimit, the election's). New peer connections in a cut direction are
// reset at once (see Proxy.StallToServers).
func (e *Ensemble) Isolate(i int) error {
	peers, err := e.peerProxies(i)
	if err != nil {
		return err
	}
	for j := range peers {
		if j != i {
			cutOneWay(peers, i, j)
			cutOneWay(peers, j, i)
		}
	}
	return nil
}

// Partition splits the members into groups: members of different groups no longer hear
// each other, in either direction; members of one group still do. A member named in no
// group is isolated from every member. Each member may be named once. It needs
// WithPeerProxies; see Isolate for what a cut is.
func (e *Ensemble) Partition(groups ...[]int) error {
	var all []int
	for _, g := range groups {
		all = append(all, g...)
	}
	peers, err := e.peerProxies(all...)
	if err != nil {
		return err
	}
	group := make([]int, len(peers))
	for i := range group {
		group[i] = -1 - i // alone unless named
	}
	for gi, g := range groups {
		for _, i := range g {
			if group[i] >= 0 {
				return fmt.Errorf("zktest: member %d is named twice in a partition", i)
			}
			group[i] = gi
		}
	}
	for i := range peers {
		for j := range peers {
			if i != j && group[i] != group[j] {
				cutOneWay(peers, i, j)
			}
		}
	}
	return nil
}

// CutOneWay cuts the traffic from member from to member to, and only that: every byte
// from sends to to is held, while to's bytes still reach from. At TCP level this is a
// one-way cut of the application's bytes, not of packets: both kernels still acknowledge
// what they receive from the proxy, so from's writes succeed and its connection looks up
// to it; to sees silence and times out. It needs WithPeerProxies; see Isolate for what a
// cut is.
func (e *Ensemble) CutOneWay(from, to int) error {
	peers, err := e.peerProxies(from, to)
	if err != nil {
		return err
	}
	if from == to {
		return fmt.Errorf("zktest: a member cannot be cut from itself (member %d)", from)
	}
	cutOneWay(peers, from, to)
	return nil
}

// HealPeers ends every cut between members. Connections that survived the cut get the
// bytes held meanwhile; members that gave up on theirs reconnect. Use WaitLeader to wait
// until the ensemble serves again. It needs WithPeerProxies.
func (e *Ensemble) HealPeers() error {
	peers, err := e.peerProxies()
	if err != nil {
		return err
	}
	for _, row := range peers {
		for _, p := range row {
			if p != nil {
				p.Heal()
			}
		}
	}
	return nil
}
