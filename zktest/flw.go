package zktest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-zookeeper/zk"
)

// FourLetterWord sends one of ZooKeeper's four-letter commands (ruok, srvr, mntr, cons,
// dump, wchc, ...) to the server at addr and returns its whole answer.
func FourLetterWord(addr, cmd string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", fmt.Errorf("zktest: %s %s: %w", cmd, addr, err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(conn, cmd); err != nil {
		return "", fmt.Errorf("zktest: %s %s: %w", cmd, addr, err)
	}
	b, err := io.ReadAll(conn)
	if err != nil {
		return "", fmt.Errorf("zktest: %s %s: %w", cmd, addr, err)
	}
	return string(b), nil
}

// Mntr returns the figures of the server's mntr command (zk_ephemerals_count,
// zk_watch_count, zk_packets_received, zk_znode_count, ...), keyed by name.
func Mntr(addr string) (map[string]string, error) {
	out, err := FourLetterWord(addr, "mntr", 5*time.Second)
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "\t")
		if ok {
			m[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("zktest: mntr %s: unexpected answer %q", addr, out)
	}
	return m, nil
}

// MntrInt returns one integer figure of the server's mntr command.
func MntrInt(addr, key string) (int64, error) {
	m, err := Mntr(addr)
	if err != nil {
		return 0, err
	}
	v, ok := m[key]
	if !ok {
		return 0, fmt.Errorf("zktest: mntr %s has no %s", addr, key)
	}
	return strconv.ParseInt(v, 10, 64)
}

// Mode returns the server's role from srvr: "standalone", "leader", "follower" or
// "observer"; an error when it does not serve.
func Mode(addr string) (string, error) {
	out, err := FourLetterWord(addr, "srvr", 2*time.Second)
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("zktest: %s does not serve: %s", addr, strings.TrimSpace(out))
}

// Sessions returns the ids of the sessions that have a connection to the server at addr
// (from cons). A session the server has expired is not listed.
func Sessions(addr string) ([]int64, error) {
	out, err := FourLetterWord(addr, "cons", 5*time.Second)
	if err != nil {
		return nil, err
	}
	var ids []int64
	for _, field := range strings.FieldsFunc(out, func(r rune) bool { return r == ',' || r == '(' || r == ')' || r == '\n' }) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(field), "sid=0x"); ok {
			id, err := strconv.ParseUint(v, 16, 64)
			if err == nil && id != 0 {
				ids = append(ids, int64(id))
			}
		}
	}
	return ids, nil
}

// TrackedSessions returns the ids of the sessions the server's session tracker holds
// (from dump): on the leader (or a standalone server), every live session of the
// ensemble, wherever its client is connected; a session the leader has expired is not
// listed. (Sessions lists only the sessions connected to addr.)
func TrackedSessions(addr string) ([]int64, error) {
	out, err := FourLetterWord(addr, "dump", 5*time.Second)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(out, "SessionTracker dump:") {
		return nil, fmt.Errorf("zktest: %s: no session tracker in dump: %s", addr, strings.TrimSpace(out))
	}
	var ids []int64
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "ephemeral nodes dump") {
			break
		}
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "0x"); ok {
			if id, err := strconv.ParseUint(v, 16, 64); err == nil {
				ids = append(ids, int64(id))
			}
		}
	}
	return ids, nil
}

// EphemeralOwners returns, from the server's dump command, the paths of ephemeral nodes
// keyed by the id of the session that owns them. Only the leader (or a standalone
// server) knows every session's ephemerals.
func EphemeralOwners(addr string) (map[int64][]string, error) {
	out, err := FourLetterWord(addr, "dump", 5*time.Second)
	if err != nil {
		return nil, err
	}
	owners := map[int64][]string{}
	var cur int64
	inEphemerals := false
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "Sessions with Ephemerals") {
			inEphemerals = true
			continue
		}
		if !inEphemerals {
			continue
		}
		t := strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(t, "0x"); ok && strings.HasSuffix(t, ":") {
			id, err := strconv.ParseUint(strings.TrimSuffix(v, ":"), 16, 64)
			if err == nil {
				cur = int64(id)
			}
			continue
		}
		if strings.HasPrefix(t, "/") {
			owners[cur] = append(owners[cur], t)
		}
	}
	return owners, nil
}

type quietLogger struct{}

func (quietLogger) Printf(string, ...any) {}

// Dial opens a plain go-zookeeper connection to connect (a connect string), waits until it
// has a session, and returns it. It is for tests that look at the server behind a
// recipe's back; the library's own client lives in package framework.
func Dial(ctx context.Context, connect string, sessionTimeout time.Duration) (*zk.Conn, error) {
	conn, events, err := zk.Connect(strings.Split(connect, ","), sessionTimeout, zk.WithLogger(quietLogger{}))
	if err != nil {
		return nil, err
	}
	for {
		select {
		case ev := <-events:
			if ev.State == zk.StateHasSession {
				go func() {
					for range events {
					}
				}()
				return conn, nil
			}
		case <-ctx.Done():
			conn.Close()
			return nil, fmt.Errorf("zktest: dial %s: %w", connect, ctx.Err())
		}
	}
}

// Children returns the sorted children of path on the server(s) at connect, or nil when
// the path does not exist.
func Children(ctx context.Context, connect, path string) ([]string, error) {
	conn, err := Dial(ctx, connect, 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	kids, _, err := conn.Children(path)
	if err == zk.ErrNoNode {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("zktest: children of %s: %w", path, err)
	}
	sort.Strings(kids)
	return kids, nil
}
