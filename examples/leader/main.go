// Command leader shows leader election with package recipes/leader (Curator's
// LeaderLatch): a service runs as three instances, A, B and C, and a periodic job — say,
// sending the hourly report — must run on one of them only.
//
//  1. Every instance runs the same code: it waits until its latch makes it leader, then
//     runs the job on each tick for as long as its term lasts.
//  2. The leader is shut down (think: a deploy) after a few runs. It stops working, then
//     closes its latch; the next instance in line takes over at once, without waiting for
//     a session to expire.
//  3. Each tick is checked: the job never runs on two instances at once, and each new
//     leader's fencing token is higher than the last.
//  4. The job writes its reports into a fenced store: every write carries the term's
//     token, and the store refuses a token lower than the highest it has seen. A
//     leader paused (GC, SIGSTOP) past its session can wake up and write once more
//     before it learns that it no longer leads; the store refuses that write. The end
//     of the run shows it: a late write with A's token, after B and C wrote, is refused.
//  5. The job runs with the term's context, checked before each run. It is cancelled
//     before the term's Done closes and before the latch's listeners hear that
//     leadership ended, so no run starts after they were told.
//
// Run it:
//
//	go run ./examples/leader                     # on an embedded ZooKeeper
//	go run ./examples/leader -connect host:2181  # on yours (uses /examples/leader)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/zktest"
)

const (
	electionPath = "/examples/leader/report-job"

	tickEvery      = 50 * time.Millisecond // the job's period
	runsPerLeader  = 5                     // each leader is shut down after this many runs
	takeoverBudget = 2 * time.Second       // "at once": well under a session timeout
)

var instances = []string{"A", "B", "C"}

func main() {
	connect := flag.String("connect", os.Getenv("ZK_CONNECT"),
		"ZooKeeper host:port[,host:port...][/chroot] (default $ZK_CONNECT); empty: start one for this run")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	srv, err := zktest.StartStandalone(ctx, zktest.UseServers(*connect), zktest.WithStartNotice(os.Stderr))
	if err == nil {
		err = run(ctx, srv.ConnectString(), os.Stdout)
		srv.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		os.Exit(1)
	}
}

// sessionTimeout is the session timeout this example's clients ask for (framework's
// default is 30 s; Curator asks for 60 s). It is how long the server keeps the session of a client
// that went silent — crashed, paused or cut off — and with it the client's ephemeral
// nodes: its lock, lease or election nodes. Others wait up to that long before a crashed
// holder's place is theirs. Shorter means a faster take-over, but a pause or network blip
// that long costs a holder its session.
const sessionTimeout = 4 * time.Second

// newClient connects a client to ZooKeeper with the options this example relies on.
// Close it when done.
func newClient(ctx context.Context, connect string) (*framework.Client, error) {
	c, err := framework.Connect(ctx, connect, framework.WithSessionTimeout(sessionTimeout))
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", connect, err)
	}
	return c, nil
}

// store is the resource the leader writes to, fenced: it remembers the highest token it
// has accepted and refuses a write with a lower one. Here it is a map in memory; in
// production it is the database or service the job writes to, and the check is made
// there (a conditional write: "UPDATE ... WHERE token <= ?", a compare-and-set). It is
// safe for concurrent use.
type store struct {
	mu      sync.Mutex
	highest int64
	reports []string
}

// errStaleToken is the store's refusal of a write from an older leader.
var errStaleToken = errors.New("refused: a newer leader has written (stale fencing token)")

// write appends report unless token is lower than the highest token seen.
func (s *store) write(token int64, report string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if token < s.highest {
		return errStaleToken
	}
	s.highest = token
	s.reports = append(s.reports, report)
	return nil
}

// job is the periodic job and its bookkeeping: who ran it, and whether two instances
// ever ran it or led at the same time. It is safe for concurrent use.
type job struct {
	out        *log.Logger
	store      store
	running    atomic.Int32 // instances running the job now
	leading    atomic.Int32 // instances working as leader now
	overlaps   atomic.Int32 // times the job ran on two instances at once
	dualLeads  atomic.Int32 // times two instances worked as leader at once
	mu         sync.Mutex
	runs       map[string]int // runs per instance
	total      int
	lastToken  int64
	tokensUp   bool
	stepDownAt time.Time // when the last leader closed its latch
	firstToken int64     // the first leader's token, for the late write at the end
}

// run is one run of the job on instance name, as leader of the term with token.
func (j *job) run(name string, token int64) error {
	if j.running.Add(1) > 1 {
		j.overlaps.Add(1)
	}
	defer j.running.Add(-1)
	j.mu.Lock()
	j.total++
	j.runs[name]++
	n := j.total
	j.mu.Unlock()
	j.out.Printf("  run %2d: instance %s sends the hourly report", n, name)
	time.Sleep(5 * time.Millisecond) // the work
	return j.store.write(token, fmt.Sprintf("report %d from %s", n, name))
}

func run(ctx context.Context, connect string, w io.Writer) error {
	out := log.New(w, "", 0)
	j := &job{out: out, runs: map[string]int{}, tokensUp: true}

	out.Printf("== %d instances, one periodic job, run only on the leader ==", len(instances))
	latches := make([]*leader.Latch, len(instances))
	for i, name := range instances {
		c, err := newClient(ctx, connect)
		if err != nil {
			return err
		}
		defer c.Close()
		l, err := leader.NewLatch(c, electionPath, "instance-"+name)
		if err != nil {
			return err
		}
		defer l.Close() // after a failure; Close is idempotent
		// Started one after the other, the instances line up A, B, C.
		if err := l.Start(ctx); err != nil {
			return err
		}
		latches[i] = l
	}

	errs := make(chan error, len(instances))
	var wg sync.WaitGroup
	for i, name := range instances {
		wg.Go(func() { errs <- instance(ctx, j, name, latches[i]) })
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			return err
		}
	}

	out.Printf("== summary ==")
	counts := make([]string, len(instances))
	for i, name := range instances {
		counts[i] = fmt.Sprintf("%s %d", name, j.runs[name])
	}
	out.Printf("runs per instance: %s (%d in all)", strings.Join(counts, ", "), j.total)
	if j.overlaps.Load() != 0 || j.dualLeads.Load() != 0 {
		return fmt.Errorf("the job ran on two instances at once %d times; two leaders at once %d times",
			j.overlaps.Load(), j.dualLeads.Load())
	}
	out.Printf("job never ran on two instances at once, and never two leaders at once")
	if !j.tokensUp {
		return errors.New("a new leader's fencing token was not higher than the last")
	}
	out.Printf("each new leader's fencing token was higher than the last")

	// A paused leader wakes up: A's last write, with A's token, arrives after B and C
	// have written. Nothing on A's side can stop it; the store does.
	err := j.store.write(j.firstToken, "late report from A")
	if !errors.Is(err, errStaleToken) {
		return fmt.Errorf("the store took a late write with the first leader's token: %v", err)
	}
	out.Printf("a late write with instance A's token: %v", err)
	out.Printf("the store holds %d reports", len(j.store.reports))
	return nil
}

// instance is one instance of the service: it waits for leadership, runs the job on each
// tick while its term lasts, and after runsPerLeader runs shuts down (closes its latch).
func instance(ctx context.Context, j *job, name string, l *leader.Latch) error {
	runs := 0
	for {
		if err := l.Await(ctx); err != nil {
			return err
		}
		term, err := l.Term()
		if err != nil {
			continue // lost again already: wait for the next term
		}
		if j.leading.Add(1) > 1 {
			j.dualLeads.Add(1)
		}
		token, err := becameLeader(ctx, j, name, l, term)
		if err != nil {
			return err
		}

		// Work with a context that ends when leadership may be lost: it is cancelled
		// before the latch's listeners hear that leadership ended. Check it before each
		// run; the token covers a run that was already under way.
		w, stop := term.Context(ctx)
		tick := time.NewTicker(tickEvery)
	work:
		for runs < runsPerLeader && w.Err() == nil {
			select {
			case <-w.Done():
			case <-tick.C:
				if w.Err() != nil {
					break work
				}
				if err := j.run(name, token); err != nil {
					j.out.Printf("instance %s: %v", name, err)
					break work // a newer leader has written: this term is over
				}
				runs++
			}
		}
		tick.Stop()
		stop()
		j.leading.Add(-1) // stop working as leader first, then give leadership up

		if runs == runsPerLeader {
			j.out.Printf("instance %s is shut down for a deploy: it closes its latch", name)
			j.mu.Lock()
			j.stepDownAt = time.Now()
			j.mu.Unlock()
			return l.Close() // ends the term, then deletes the node: the next one leads
		}
		j.out.Printf("instance %s lost leadership; it waits to lead again", name)
	}
}

// becameLeader reports a new term: who leads, how fast it took over, and its token, which
// it returns.
func becameLeader(ctx context.Context, j *job, name string, l *leader.Latch, term *leader.Term) (int64, error) {
	token, err := term.Token(ctx)
	if err != nil {
		return 0, err
	}
	j.mu.Lock()
	stepDownAt := j.stepDownAt
	if token <= j.lastToken {
		j.tokensUp = false
	}
	if j.firstToken == 0 {
		j.firstToken = token
	}
	j.lastToken = token
	j.mu.Unlock()
	if stepDownAt.IsZero() {
		j.out.Printf("instance %s is leader", name)
	} else {
		if d := time.Since(stepDownAt); d > takeoverBudget {
			return 0, fmt.Errorf("instance %s took over %v after the last leader closed", name, d)
		}
		j.out.Printf("instance %s is leader: it took over at once", name)
	}
	line, err := inLine(ctx, l)
	if err != nil {
		return 0, err
	}
	j.out.Printf("in line: %s", line)
	return token, nil
}

// inLine lists the participants of the election, the leader first.
func inLine(ctx context.Context, l *leader.Latch) (string, error) {
	ps, err := l.Participants(ctx)
	if err != nil {
		return "", err
	}
	ids := make([]string, len(ps))
	for i, p := range ps {
		ids[i] = p.ID
		if p.Leader {
			ids[i] += " (leader)"
		}
	}
	return strings.Join(ids, ", "), nil
}
