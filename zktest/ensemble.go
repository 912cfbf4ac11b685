package zktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Ensemble is a ZooKeeper ensemble of 3 or 5 members on loopback, each a QuorumPeerMain
// process with its own myid, data directory and ports. Members are numbered from 0.
// Its methods are safe for concurrent use.
type Ensemble struct {
	connect string
	members []*process // nil for an ensemble named by ZK_TEST_CONNECT
	dir     string
	peers   [][]*Proxy // peers[i][j]: how member i reaches member j (nil without WithPeerProxies)
	secure  []string   // member i's secure (TLS) client address (nil without WithEnsembleTLS)

	mu       sync.Mutex // guards the fields below, and connect and members, which AddMember extends
	closed   bool
	reconfig *reconfigState // nil without WithReconfig (reconfig.go)
}

// EnsembleOption configures StartEnsemble and NewEnsemble.
type EnsembleOption func(*ensembleOptions)

type ensembleOptions struct {
	peerProxies bool
	tls         *tlsSetup  // a secure client port on every member (see WithEnsembleTLS)
	sasl        *saslSetup // SASL users on every member (see WithEnsembleSASLDigestUsers)
	reconfig    bool       // WithReconfig
}

// WithPeerProxies routes the members' peer traffic (quorum and election ports) through
// fault proxies, one per directed pair of members: member i's configuration names member
// j at the addresses of the proxy from i to j, which forwards to j's real ports (a member
// binds only the ports of its own server line). Isolate, Partition, CutOneWay and
// HealPeers then cut and heal links between members while clients still reach every
// member's client port. The default is direct peer connections, on which those methods
// return ErrUnsupported.
func WithPeerProxies() EnsembleOption {
	return func(o *ensembleOptions) { o.peerProxies = true }
}

// StartEnsemble starts an ensemble of n members (3 or 5) and waits until it has a leader
// and every member serves. The caller must Close it.
func StartEnsemble(n int, opts ...EnsembleOption) (*Ensemble, error) {
	if n != 3 && n != 5 {
		return nil, fmt.Errorf("zktest: an ensemble has 3 or 5 members, not %d", n)
	}
	var o ensembleOptions
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.sasl != nil {
		if err := o.sasl.check(); err != nil {
			return nil, err
		}
	}
	if connect := os.Getenv("ZK_TEST_CONNECT"); connect != "" && o.tls == nil && o.sasl == nil {
		if o.reconfig {
			return nil, fmt.Errorf("%w: WithReconfig needs an ensemble of this package's own", ErrUnsupported)
		}
		return &Ensemble{connect: connect}, nil
	}
	if o.reconfig && o.peerProxies {
		return nil, fmt.Errorf("%w: WithReconfig with WithPeerProxies", ErrUnsupported)
	}
	inst, err := findInstall()
	if err != nil {
		return nil, fmt.Errorf("%w (an ensemble needs a local install)\n%s", err, howToGet)
	}
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		e, err := startLocalEnsemble(inst, n, o)
		if err == nil {
			return e, nil
		}
		last = err
	}
	return nil, last
}

func startLocalEnsemble(inst *javaInstall, n int, o ensembleOptions) (*Ensemble, error) {
	dir, err := os.MkdirTemp("", "zktest-ensemble-")
	if err != nil {
		return nil, err
	}
	ports := make([]int, 3*n)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
	}
	var addrs []string
	for i := 0; i < n; i++ {
		addrs = append(addrs, "127.0.0.1:"+strconv.Itoa(ports[3*i]))
	}
	e := &Ensemble{connect: strings.Join(addrs, ","), dir: dir}
	if o.peerProxies {
		e.peers = make([][]*Proxy, n)
		for i := range e.peers {
			e.peers[i] = make([]*Proxy, n)
			for j := range e.peers[i] {
				if i == j {
					continue
				}
				q := "127.0.0.1:" + strconv.Itoa(ports[3*j+1])
				el := "127.0.0.1:" + strconv.Itoa(ports[3*j+2])
				if e.peers[i][j], err = startProxy(true, q, el); err != nil {
					e.Close()
					return nil, err
				}
			}
		}
	}
	// A member that is connected to by a member of lower id connects back to the address
	// announced in the connection's first message: make that the proxy from it to the
	// sender (see setElectionRewrite).
	for i := range e.peers {
		for j := range e.peers[i] {
			if i != j {
				e.peers[i][j].setElectionRewrite("127.0.0.1:"+strconv.Itoa(ports[3*j+2]),
					e.peers[j][i].listeners[1].Addr().String())
			}
		}
	}
	for i := 0; i < n; i++ {
		m, err := e.memberProcess(inst, o, i, ports, addrs[i])
		if err != nil {
			os.RemoveAll(dir)
			return nil, err
		}
		e.members = append(e.members, m)
	}
	for _, m := range e.members {
		if err := m.start(); err != nil {
			e.Close()
			return nil, err
		}
	}
	for _, m := range e.members {
		if err := waitServing(context.Background(), m.clientAt, startTimeout, m.exited()); err != nil {
			err = fmt.Errorf("%w\n%s", err, m.logTail())
			e.Close()
			return nil, err
		}
	}
	if err := e.waitSecure(o); err != nil {
		e.Close()
		return nil, err
	}
	if o.reconfig {
		e.reconfig = &reconfigState{inst: inst, sasl: o.sasl}
	}
	return e, nil
}

// memberProcess writes member i's directory (its id; its configuration, with the peers'
// addresses, through the peer proxies if any, and what TLS or SASL need) and returns its
// process, not started.
func (e *Ensemble) memberProcess(inst *javaInstall, o ensembleOptions, i int, ports []int, clientAt string) (*process, error) {
	n := len(ports) / 3
	var err error
	var peers []string
	for j := 0; j < n; j++ {
		at := fmt.Sprintf("127.0.0.1:%d:%d", ports[3*j+1], ports[3*j+2])
		if e.peers != nil && i != j {
			via := e.peers[i][j]
			at = fmt.Sprintf("127.0.0.1:%d:%d", listenPort(via.listeners[0]), listenPort(via.listeners[1]))
		}
		peers = append(peers, fmt.Sprintf("server.%d=%s", j+1, at))
	}
	mdir := filepath.Join(e.dir, "m"+strconv.Itoa(i+1))
	data := filepath.Join(mdir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(i+1)+"\n"), 0o644); err != nil {
		return nil, err
	}
	cfg := filepath.Join(mdir, "zoo.cfg")
	extra := append([]string{"standaloneEnabled=false", "cnxTimeout=1000", "electionPortBindRetry=50"}, peers...)
	if o.reconfig { // the server lines go to a dynamic configuration file
		extra, err = reconfigLines(mdir, ports)
	}
	if err == nil {
		extra, err = e.addSecurePort(o, mdir, extra)
	}
	if err == nil {
		err = writeConfig(cfg, data, ports[3*i], extra...)
	}
	var jvmFlags []string
	if err == nil && o.sasl != nil {
		jvmFlags, err = o.sasl.write(mdir)
	}
	if err != nil {
		return nil, err
	}
	return &process{install: inst,
		mainCls: "org.apache.zookeeper.server.quorum.QuorumPeerMain",
		cfgPath: cfg, logDir: mdir, clientAt: clientAt, jvmFlags: jvmFlags}, nil
}

// NewEnsemble starts an ensemble of n members for the test and stops it at cleanup.
// When no ZooKeeper is available it fails the test, or skips it under -short.
func NewEnsemble(t testing.TB, n int, opts ...EnsembleOption) *Ensemble {
	t.Helper()
	e, err := StartEnsemble(n, opts...)
	if err != nil {
		unavailable(t, err)
	}
	t.Cleanup(func() {
		keepLogs(t, e.dir)
		_ = e.Close()
	})
	return e
}

// ConnectString returns the members' client addresses, comma-separated (with
// WithReconfig: of every member started, including those added and those removed).
func (e *Ensemble) ConnectString() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.connect
}

// Size returns the number of members (with WithReconfig: of members started, including
// those added and those removed).
func (e *Ensemble) Size() int { return len(strings.Split(e.ConnectString(), ",")) }

// Addr returns member i's client address.
func (e *Ensemble) Addr(i int) string { return strings.Split(e.ConnectString(), ",")[i] }

// Controllable reports whether members can be killed and restarted (false for an ensemble
// named by ZK_TEST_CONNECT).
func (e *Ensemble) Controllable() bool { return e.members != nil }

func (e *Ensemble) member(i int) (*process, error) {
	e.mu.Lock()
	closed, members := e.closed, e.members
	e.mu.Unlock()
	if closed {
		return nil, ErrClosed
	}
	if members == nil {
		return nil, ErrUnsupported
	}
	if i < 0 || i >= len(members) {
		return nil, fmt.Errorf("zktest: no member %d in an ensemble of %d", i, len(members))
	}
	return members[i], nil
}

// procs returns the member processes (nil for an ensemble named by ZK_TEST_CONNECT).
func (e *Ensemble) procs() []*process {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.members
}

// procsOrNone returns one entry per member: its process, or nil when it is not ours.
func (e *Ensemble) procsOrNone() []*process {
	if ps := e.procs(); ps != nil {
		return ps
	}
	return make([]*process, e.Size())
}

// Leader returns the index of the member whose srvr says "Mode: leader", or an error if
// no member is leader now.
func (e *Ensemble) Leader() (int, error) {
	for i, m := range e.procsOrNone() {
		if m != nil && !m.running() {
			continue
		}
		if mode, err := Mode(e.Addr(i)); err == nil && mode == "leader" {
			return i, nil
		}
	}
	return -1, errors.New("zktest: no leader")
}

// WaitLeader waits until a leader is elected and every running member serves, and returns
// the leader's index.
func (e *Ensemble) WaitLeader(ctx context.Context) (int, error) {
	for {
		if i, err := e.Leader(); err == nil && e.allRunningServe() {
			return i, nil
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("zktest: waiting for a leader: %w", ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (e *Ensemble) allRunningServe() bool {
	for i, m := range e.procsOrNone() {
		if m != nil && !m.running() {
			continue
		}
		if _, err := Mode(e.Addr(i)); err != nil {
			return false
		}
	}
	return true
}

// Kill kills member i with SIGKILL; its data stays for Restart.
func (e *Ensemble) Kill(i int) error {
	m, err := e.member(i)
	if err != nil {
		return err
	}
	m.kill()
	return nil
}

// KillLeader kills the current leader and returns its index.
func (e *Ensemble) KillLeader() (int, error) {
	i, err := e.Leader()
	if err != nil {
		return -1, err
	}
	return i, e.Kill(i)
}

// Restart starts member i again with the same data and ports (killing it first if it
// runs). It does not wait for the member to join: use WaitLeader.
func (e *Ensemble) Restart(i int) error {
	m, err := e.member(i)
	if err != nil {
		return err
	}
	m.kill()
	return m.start()
}

// Pause stops member i with SIGSTOP (a hung machine: sockets open, nothing answers). It
// returns once the process has stopped.
func (e *Ensemble) Pause(i int) error {
	m, err := e.member(i)
	if err != nil {
		return err
	}
	return m.signal(syscall.SIGSTOP)
}

// Resume continues member i after Pause.
func (e *Ensemble) Resume(i int) error {
	m, err := e.member(i)
	if err != nil {
		return err
	}
	return m.signal(syscall.SIGCONT)
}

// StopQuorum kills a majority of the members (the leader among them), so the ensemble
// stops serving, and returns the indexes it killed, for RestoreQuorum.
func (e *Ensemble) StopQuorum() ([]int, error) {
	if e.procs() == nil {
		return nil, ErrUnsupported
	}
	leader, err := e.Leader()
	if err != nil {
		leader = 0
	}
	killed := []int{leader}
	for i := 0; len(killed) < len(e.procs())/2+1; i++ {
		if i != leader {
			killed = append(killed, i)
		}
	}
	for _, i := range killed {
		if err := e.Kill(i); err != nil {
			return killed, err
		}
	}
	return killed, nil
}

// RestoreQuorum restarts every member that is not running (but those removed by
// RemoveMember) and waits for a leader.
func (e *Ensemble) RestoreQuorum(ctx context.Context) error {
	if e.procs() == nil {
		return ErrUnsupported
	}
	for i, m := range e.procs() {
		if !m.running() && !e.removed(i) {
			if err := e.Restart(i); err != nil {
				return err
			}
		}
	}
	_, err := e.WaitLeader(ctx)
	return err
}

// Close kills every member and removes their data. It may be called more than once.
func (e *Ensemble) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, m := range e.procs() {
		wg.Add(1)
		go func() { defer wg.Done(); m.kill() }()
	}
	wg.Wait()
	for _, row := range e.peers {
		for _, p := range row {
			if p != nil {
				_ = p.Close()
			}
		}
	}
	if e.dir != "" {
		_ = os.RemoveAll(e.dir)
	}
	return nil
}
