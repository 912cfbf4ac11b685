package zktest

import (
	"context"
	"fmt"
	"syscall"
	"time"
)

// stopGrace is how long Terminate waits for a member to exit after SIGTERM before it kills it.
const stopGrace = 20 * time.Second

// Terminate stops member i as an operator does in a rolling restart: SIGTERM, then
// SIGKILL if it has not exited within 20 s. It returns once the process has exited; its
// data stays for Restart. Terminating a member that does not run is fine.
func (e *Ensemble) Terminate(i int) error {
	m, err := e.member(i)
	if err != nil {
		return err
	}
	m.mu.Lock()
	cmd, done := m.cmd, m.done
	m.mu.Unlock()
	if cmd == nil {
		return nil
	}
	if m.isPaused() {
		_ = cmd.Process.Signal(syscall.SIGCONT) // a stopped JVM cannot act on SIGTERM
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(stopGrace):
	}
	m.kill() // forgets the process; SIGKILL if it still runs
	return nil
}

// WaitRejoined waits until member i, restarted, is back in the quorum: it runs, its srvr
// says it is the leader or a follower (a member answers srvr with a mode only once it
// has synchronised with the leader), a new session can be opened on it alone (a write the
// quorum commits, forwarded by it) and a read served by it succeeds, and the ensemble has
// a leader with every running member serving (WaitLeader). It returns the leader's index.
func (e *Ensemble) WaitRejoined(ctx context.Context, i int) (int, error) {
	m, err := e.member(i)
	if err != nil {
		return -1, err
	}
	addr := e.Addr(i)
	var last error
	for {
		if !m.running() {
			return -1, fmt.Errorf("zktest: member %d does not run\n%s", i, m.logTail())
		}
		last = rejoined(ctx, addr)
		if last == nil {
			return e.WaitLeader(ctx)
		}
		select {
		case <-ctx.Done():
			return -1, fmt.Errorf("zktest: member %d has not rejoined the quorum (last: %v): %w", i, last, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// rejoined checks once that the member at addr serves as part of a quorum.
func rejoined(ctx context.Context, addr string) error {
	mode, err := Mode(addr)
	if err != nil {
		return err
	}
	if mode != "leader" && mode != "follower" {
		return fmt.Errorf("zktest: %s is %s", addr, mode)
	}
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := Dial(sctx, addr, 10*time.Second)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, _, err := conn.Children("/"); err != nil {
		return fmt.Errorf("zktest: reading / on %s: %w", addr, err)
	}
	return nil
}

func (p *process) isPaused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused
}
