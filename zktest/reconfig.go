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
	"time"

	"github.com/go-zookeeper/zk"
)

// WithReconfig starts an ensemble with dynamic reconfiguration (ZooKeeper 3.5+'s
// reconfigEnabled=true): its members' server lines live in a dynamic configuration file,
// and the ensemble accepts the reconfig operation from any client (its members run with
// skipACL=yes: a test ensemble only). AddMember and RemoveMember change its membership.
// It cannot be combined with WithPeerProxies nor used with ZK_TEST_CONNECT.
func WithReconfig() EnsembleOption {
	return func(o *ensembleOptions) { o.reconfig = true }
}

// reconfigState is what an ensemble started WithReconfig keeps for AddMember and
// RemoveMember. Ensemble.mu guards removed.
type reconfigState struct {
	inst    *javaInstall
	sasl    *saslSetup   // the ensemble's SASL users, given to a member AddMember starts
	op      sync.Mutex   // one membership change at a time
	removed map[int]bool // members removed by RemoveMember
}

// reconfigMembersSetting are the static settings of a member of an ensemble with
// dynamic reconfiguration, but its dynamic configuration file's name.
var reconfigMemberSettings = []string{"standaloneEnabled=false", "cnxTimeout=1000", "electionPortBindRetry=50",
	"reconfigEnabled=true",
	// Unknown keys of zoo.cfg become system properties "zookeeper.<key>": the reconfig
	// operation is refused without it (or a super user), /zookeeper/config being
	// read-only to the world.
	"skipACL=yes"}

// serverLine is a member's line in a dynamic configuration.
func serverLine(id, quorumPort, electionPort, clientPort int) string {
	return fmt.Sprintf("server.%d=127.0.0.1:%d:%d:participant;127.0.0.1:%d", id, quorumPort, electionPort, clientPort)
}

// reconfigLines writes the dynamic configuration file of a member of a new ensemble
// whose ports are ports (client, quorum, election port per member) in mdir, and returns
// the static settings that name it.
func reconfigLines(mdir string, ports []int) ([]string, error) {
	var lines []string
	for j := 0; j < len(ports)/3; j++ {
		lines = append(lines, serverLine(j+1, ports[3*j+1], ports[3*j+2], ports[3*j]))
	}
	return writeDynamic(mdir, lines)
}

func writeDynamic(mdir string, lines []string) ([]string, error) {
	dyn := filepath.Join(mdir, "zoo.cfg.dynamic")
	if err := os.WriteFile(dyn, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		return nil, err
	}
	return append(append([]string(nil), reconfigMemberSettings...), "dynamicConfigFile="+dyn), nil
}

// removed reports whether member i was removed by RemoveMember.
func (e *Ensemble) removed(i int) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.reconfig != nil && e.reconfig.removed[i]
}

func (e *Ensemble) reconfigurable() (*reconfigState, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil, ErrClosed
	}
	if e.reconfig == nil {
		return nil, fmt.Errorf("%w: the ensemble was not started WithReconfig", ErrUnsupported)
	}
	return e.reconfig, nil
}

// Members returns the indexes of the members of the ensemble's configuration as this
// package changed it: every member started, but those removed by RemoveMember.
func (e *Ensemble) Members() []int {
	var out []int
	for i := 0; i < e.Size(); i++ {
		if !e.removed(i) {
			out = append(out, i)
		}
	}
	return out
}

// membersConnect is the connect string of the members, but those removed and except.
func (e *Ensemble) membersConnect(except int) string {
	var addrs []string
	for _, i := range e.Members() {
		if i != except {
			addrs = append(addrs, e.Addr(i))
		}
	}
	return strings.Join(addrs, ",")
}

// Config returns the ensemble's dynamic configuration (the data of /zookeeper/config)
// as the members of its configuration serve it.
func (e *Ensemble) Config(ctx context.Context) (string, error) {
	conn, err := Dial(ctx, e.membersConnect(-1), 10*time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	data, _, err := conn.Get("/zookeeper/config")
	if err != nil {
		return "", fmt.Errorf("zktest: reading /zookeeper/config: %w", err)
	}
	return string(data), nil
}

// reconfig runs one incremental reconfiguration through a member of the configuration
// other than except, trying again while the ensemble cannot take it yet (a change in
// progress, a new member not in sync yet), until ctx ends.
func (e *Ensemble) reconfigure(ctx context.Context, except int, joining, leaving []string) error {
	for {
		err := func() error {
			conn, err := Dial(ctx, e.membersConnect(except), 10*time.Second)
			if err != nil {
				return err
			}
			defer conn.Close()
			_, err = conn.IncrementalReconfig(joining, leaving, -1)
			return err
		}()
		if err == nil {
			return nil
		}
		if errors.Is(err, zk.ErrReconfigDisabled) || errors.Is(err, zk.ErrNoAuth) || errors.Is(err, zk.ErrBadArguments) {
			return fmt.Errorf("zktest: reconfig (joining %q, leaving %q): %w", joining, leaving, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zktest: reconfig (joining %q, leaving %q): %w (last error: %v)", joining, leaving, ctx.Err(), err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitConfig waits until the server at addr serves a configuration for which ok holds.
func waitConfig(ctx context.Context, addr string, ok func(cfg string) bool) error {
	var last string
	for {
		conn, err := Dial(ctx, addr, 10*time.Second)
		if err == nil {
			data, _, gerr := conn.Get("/zookeeper/config")
			conn.Close()
			if gerr == nil {
				last = string(data)
				if ok(last) {
					return nil
				}
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("zktest: %s: waiting for the new configuration: %w; it serves:\n%s", addr, ctx.Err(), last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// AddMember starts a new member and reconfigures the ensemble to take it in: the new
// server's configuration names the members of the current configuration and itself;
// once it serves (in sync with the leader), an incremental reconfig adds it as a
// participant. It returns the new member's index (see Addr) once the new member serves
// the configuration that includes it.
func (e *Ensemble) AddMember(ctx context.Context) (int, error) {
	rc, err := e.reconfigurable()
	if err != nil {
		return -1, err
	}
	rc.op.Lock()
	defer rc.op.Unlock()
	cfg, err := e.Config(ctx)
	if err != nil {
		return -1, err
	}
	var lines []string
	for _, l := range strings.Split(cfg, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "server.") {
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	ports := make([]int, 3)
	for i := range ports {
		if ports[i], err = freePort(); err != nil {
			return -1, err
		}
	}
	e.mu.Lock()
	idx := len(e.members)
	e.mu.Unlock()
	id := idx + 1
	line := serverLine(id, ports[1], ports[2], ports[0])
	mdir := filepath.Join(e.dir, "m"+strconv.Itoa(id))
	data := filepath.Join(mdir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return -1, err
	}
	if err := os.WriteFile(filepath.Join(data, "myid"), []byte(strconv.Itoa(id)+"\n"), 0o644); err != nil {
		return -1, err
	}
	extra, err := writeDynamic(mdir, append(lines, line))
	if err != nil {
		return -1, err
	}
	cfgPath := filepath.Join(mdir, "zoo.cfg")
	if err := writeConfig(cfgPath, data, ports[0], extra...); err != nil {
		return -1, err
	}
	var jvmFlags []string
	if rc.sasl != nil {
		if jvmFlags, err = rc.sasl.write(mdir); err != nil {
			return -1, err
		}
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	p := &process{install: rc.inst, mainCls: "org.apache.zookeeper.server.quorum.QuorumPeerMain",
		cfgPath: cfgPath, logDir: mdir, clientAt: addr, jvmFlags: jvmFlags}
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return -1, ErrClosed
	}
	e.members = append(e.members, p) // from now on Close stops it
	e.connect += "," + addr
	if rc.removed == nil {
		rc.removed = map[int]bool{}
	}
	rc.removed[idx] = true // not a member until the reconfig is through
	e.mu.Unlock()
	if err := p.start(); err != nil {
		return -1, err
	}
	if err := waitServing(ctx, addr, startTimeout, p.exited()); err != nil {
		return -1, fmt.Errorf("%w\n%s", err, p.logTail())
	}
	if err := e.reconfigure(ctx, -1, []string{line}, nil); err != nil {
		return -1, fmt.Errorf("%w\n%s", err, p.logTail())
	}
	e.mu.Lock()
	delete(rc.removed, idx)
	e.mu.Unlock()
	if err := waitConfig(ctx, addr, func(cfg string) bool { return strings.Contains(cfg, line) }); err != nil {
		return -1, err
	}
	return idx, nil
}

// RemoveMember reconfigures the ensemble without member i, then stops it (SIGKILL) and
// waits until the remaining members serve a configuration without it. Its data stays
// until Close; RestoreQuorum does not start it again.
func (e *Ensemble) RemoveMember(ctx context.Context, i int) error {
	rc, err := e.reconfigurable()
	if err != nil {
		return err
	}
	rc.op.Lock()
	defer rc.op.Unlock()
	m, err := e.member(i)
	if err != nil {
		return err
	}
	if e.removed(i) {
		return fmt.Errorf("zktest: member %d is not in the configuration", i)
	}
	if err := e.reconfigure(ctx, i, nil, []string{strconv.Itoa(i + 1)}); err != nil {
		return err
	}
	e.mu.Lock()
	if rc.removed == nil {
		rc.removed = map[int]bool{}
	}
	rc.removed[i] = true
	e.mu.Unlock()
	m.kill()
	gone := "server." + strconv.Itoa(i+1) + "="
	for _, j := range e.Members() {
		if err := waitConfig(ctx, e.Addr(j), func(cfg string) bool { return !strings.Contains(cfg, gone) }); err != nil {
			return err
		}
	}
	return nil
}
