package reliability_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/recipes/queue"
)

// queueChildEnv marks the test binary re-run as a queue consumer process (queueChildMain).
const queueChildEnv = "ZOOCURATOR_RELIABILITY_QUEUE_CHILD"

// queueFastFaults are the faults the fast profile runs the queue under: a lost create
// reply (a put sent twice) and a stall that expires the victim's session (its lock nodes
// go while it may be handling an item). The soak runs every fault.
var queueFastFaults = []string{"ghost-create", "long-stall-session-expires"}

// putKind is what a Put returned.
type putKind int

const (
	putOK     putKind = iota // queued once
	putTwice                 // ErrMaybeTwice: queued once or twice
	putFailed                // an error: queued at most once (a send may have been applied)
)

// queueLedger counts puts and deliveries by item, and the consumers' reports that an item
// handled was not removed (each of which may deliver that item again).
type queueLedger struct {
	mu         sync.Mutex
	puts       map[string]putKind
	nodes      map[string]string // item node -> item, for the puts that returned their node
	delivered  map[string]int
	notRemoved int            // ErrNotRemoved reports
	reported   map[string]int // node -> ErrNotRemoved reports naming it ("" for none)
	reports    []string
}

func newQueueLedger() *queueLedger {
	return &queueLedger{puts: map[string]putKind{}, nodes: map[string]string{}, delivered: map[string]int{}, reported: map[string]int{}}
}

// put records a put of item, whose node is node ("" when the put returned none).
func (l *queueLedger) put(item, node string, err error) {
	k := putOK
	switch {
	case errors.Is(err, queue.ErrMaybeTwice):
		k = putTwice
	case err != nil:
		k = putFailed
	}
	l.mu.Lock()
	l.puts[item] = k
	if node != "" {
		l.nodes[node] = item
	}
	l.mu.Unlock()
}

func (l *queueLedger) deliver(_ context.Context, item string) error {
	l.mu.Lock()
	l.delivered[item]++
	l.mu.Unlock()
	return nil
}

func (l *queueLedger) report(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if errors.Is(err, queue.ErrNotRemoved) {
		l.notRemoved++
		var nre *queue.NotRemovedError
		// Attributed in check: the put that made the node may not have returned yet.
		l.reported[nodeOf(err, &nre)]++
	}
	if len(l.reports) < 20 {
		l.reports = append(l.reports, err.Error())
	}
}

// nodeOf returns the node a *queue.NotRemovedError in err names ("" if none).
func nodeOf(err error, nre **queue.NotRemovedError) string {
	if errors.As(err, nre) {
		return (*nre).Path
	}
	return ""
}

// pending returns how many items that must be delivered were not yet.
func (l *queueLedger) pending() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for item, k := range l.puts {
		if k != putFailed && l.delivered[item] == 0 {
			n++
		}
	}
	return n
}

func (l *queueLedger) total() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, c := range l.delivered {
		n += c
	}
	return n
}

// check is the checker: no item put (or put perhaps twice) is lost, no item is delivered
// that was not put, and deliveries beyond the first are explained: by a put reported
// perhaps twice (one extra), by a failed put whose sends may both have been applied (one
// extra), and by a consumer's ErrNotRemoved report naming the item's node (one extra
// each). A report naming a node no put returned (a second copy of an item put perhaps
// twice, or a failed put's) explains one extra delivery of such an item. It returns the
// lost items and the unexplained extra deliveries.
func (l *queueLedger) check() (lost []string, unexplained, extra int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	reportedBy := map[string]int{} // item -> reports naming its node
	unknown := 0                   // reports naming no node a put returned
	for node, n := range l.reported {
		if item, ok := l.nodes[node]; ok {
			reportedBy[item] += n
		} else {
			unknown += n
		}
	}
	unknownNodes := 0 // extra deliveries of items some of whose nodes are not known
	for item, k := range l.puts {
		n := l.delivered[item]
		if n == 0 && k != putFailed {
			lost = append(lost, item)
		}
		if n > 1 {
			extra += n - 1
			allowed := reportedBy[item]
			if k != putOK {
				allowed++
			}
			over := max(0, n-1-allowed)
			if k == putOK {
				unexplained += over
			} else {
				unknownNodes += over
			}
		}
	}
	for item, n := range l.delivered {
		if _, ok := l.puts[item]; !ok {
			lost = append(lost, "delivered but never put: "+item)
			unexplained += n
		}
	}
	unexplained += max(0, unknownNodes-unknown)
	return lost, unexplained, extra
}

// runQueue: the victim and another client each produce items and consume the queue (with
// a lock path) before, during and after the fault. Afterwards every item put is
// delivered, and none twice but where the checker has a reason.
func runQueue(t *testing.T, f fault) {
	e := newEnv(t, 1)
	qpath, lpath := e.base+"/q", e.base+"/locks"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	l := newQueueLedger()

	cctx, stopConsumers := context.WithCancel(ctx)
	defer stopConsumers()
	stop := make(chan struct{})
	var producers, consumers sync.WaitGroup
	putsAfterHeal := make([]chanCounter, 2)
	for i, c := range e.clients() {
		q, err := queue.New(c, qpath, queue.String{}, queue.WithLockPath(lpath), queue.WithErrorListener(l.report))
		require.NoError(t, err)
		consumers.Add(1)
		go func() {
			defer consumers.Done()
			_ = q.Consume(cctx, l.deliver)
		}()
		producers.Add(1)
		go func() {
			defer producers.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				item := fmt.Sprintf("%d-%d", i, n)
				pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
				node, err := q.Put(pctx, item)
				pcancel()
				l.put(item, node, err)
				if err == nil {
					putsAfterHeal[i].add()
				} else {
					pause(stop)
				}
				pause(stop) // pace the producers: a few dozen items a second
			}
		}()
	}
	require.Eventually(t, func() bool { return l.total() >= 10 }, livenessBound, 10*time.Millisecond, "no deliveries before the fault")
	heal := f.inject(t, e)
	time.Sleep(f.hold)
	heal()
	putsAfterHeal[0].reset()
	require.Eventually(t, func() bool { return putsAfterHeal[0].get() >= 3 }, livenessBound, 10*time.Millisecond,
		"liveness: the victim's puts do not get through after the fault")
	close(stop)
	producers.Wait()
	require.Eventually(t, func() bool { return l.pending() == 0 }, livenessBound, 20*time.Millisecond,
		"liveness: items put are not all delivered after the fault")
	// What a failed put may have queued is delivered too before the consumers stop.
	require.Eventually(t, func() bool {
		kids, _, err := e.others[0].Children(ctx, qpath)
		return err == nil && len(kids) == 0
	}, livenessBound, 20*time.Millisecond, "the queue does not empty")
	stopConsumers()
	consumers.Wait()

	lost, unexplained, extra := l.check()
	deliveries := l.total()
	l.mu.Lock()
	var twice, failed int
	for _, k := range l.puts {
		switch k {
		case putTwice:
			twice++
		case putFailed:
			failed++
		}
	}
	t.Logf("queue: %d puts (%d perhaps twice, %d failed), %d deliveries, %d extra, %d not-removed reports; reports: %v",
		len(l.puts), twice, failed, deliveries, extra, l.notRemoved, l.reports)
	l.mu.Unlock()
	assert.Empty(t, lost, "items lost")
	if f.unnoticeable {
		// A session the server expires while its client, served by another member, was
		// never cut off: the consumer learns it only after its handler ran, and may have
		// removed the item with the other consumer's lock node in between (fault.unnoticeable).
		t.Logf("queue: %d duplicates without a report under a fault the client cannot notice", unexplained)
	} else {
		assert.Zero(t, unexplained, "items delivered twice without a reason")
	}

	dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
	defer dcancel()
	require.NoError(t, e.others[0].Delete(dctx, qpath, framework.WithChildren())) // persistent, as Curator's
	require.NoError(t, e.others[0].Delete(dctx, lpath, framework.WithChildren()))
	e.checkClean()
}

// chanCounter counts under a lock.
type chanCounter struct {
	mu sync.Mutex
	n  int
}

func (c *chanCounter) add()   { c.mu.Lock(); c.n++; c.mu.Unlock() }
func (c *chanCounter) reset() { c.mu.Lock(); c.n = 0; c.mu.Unlock() }
func (c *chanCounter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

func TestQueueUnderFaults(t *testing.T) {
	for _, f := range scenarioFaults(false) {
		if *soakFor == 0 && !contains(queueFastFaults, f.name) {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			leakcheck.Check(t)
			runQueue(t, f)
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// queueChildMain is a queue consumer in its own process: it takes one item, says which,
// and never finishes it (the parent kills it).
func queueChildMain() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := framework.Connect(ctx, os.Getenv("CHILD_CONNECT"), framework.WithSessionTimeout(victimSession))
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	defer c.Close()
	q, err := queue.New(c, os.Getenv("CHILD_PATH"), queue.String{}, queue.WithLockPath(os.Getenv("CHILD_LOCKS")))
	if err != nil {
		fmt.Println("ERROR", err)
		return 1
	}
	err = q.ConsumeOne(ctx, func(ctx context.Context, item string) error {
		fmt.Println("WORKING", item)
		<-ctx.Done()
		return ctx.Err()
	})
	fmt.Println("ERROR not killed:", err)
	return 1
}

// A consumer process killed (SIGKILL) mid-item loses nothing: another consumer delivers
// that item once the dead process's session ends, and every item exactly once.
func TestQueueConsumerProcessKilled(t *testing.T) {
	leakcheck.Check(t)
	e := newEnv(t, 1)
	qpath, lpath := e.base+"/q", e.base+"/locks"
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	l := newQueueLedger()
	q, err := queue.New(e.others[0], qpath, queue.String{}, queue.WithLockPath(lpath), queue.WithErrorListener(l.report))
	require.NoError(t, err)
	const items = 30
	for n := range items {
		item := fmt.Sprint("item-", n)
		node, err := q.Put(ctx, item)
		l.put(item, node, err)
	}

	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), queueChildEnv+"=1", "CHILD_CONNECT="+ens.ConnectString(), "CHILD_PATH="+qpath, "CHILD_LOCKS="+lpath)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := bufio.NewScanner(stdout)
	require.True(t, lines.Scan(), "the child said nothing")
	victim, ok := strings.CutPrefix(lines.Text(), "WORKING ")
	require.True(t, ok, "child: %s", lines.Text())
	require.NoError(t, cmd.Process.Kill())
	_ = cmd.Wait()

	cctx, stopConsumer := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- q.Consume(cctx, l.deliver) }()
	require.Eventually(t, func() bool { return l.pending() == 0 }, livenessBound, 20*time.Millisecond,
		"liveness: not every item was delivered after the consumer process was killed")
	stopConsumer()
	require.ErrorIs(t, <-done, context.Canceled)
	lost, unexplained, extra := l.check()
	assert.Empty(t, lost)
	assert.Zero(t, unexplained)
	assert.Zero(t, extra, "no item twice")
	l.mu.Lock()
	assert.Equal(t, 1, l.delivered[victim], "the killed consumer's item %s, delivered by the other", victim)
	l.mu.Unlock()

	dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
	defer dcancel()
	require.NoError(t, e.others[0].Delete(dctx, qpath, framework.WithChildren()))
	require.NoError(t, e.others[0].Delete(dctx, lpath, framework.WithChildren()))
	e.checkClean()
}

// The queue checker's negative control: it finds a lost item, an item delivered that was
// never put, and a duplicate nothing explains; and it accepts the duplicates it has a
// reason for.
func TestQueueCheckerCatches(t *testing.T) {
	l := newQueueLedger()
	l.put("ok-lost", "/q/queue-0000000000", nil)
	l.put("ok-twice", "/q/queue-0000000001", nil)
	l.put("maybe-twice", "/q/queue-0000000002", fmt.Errorf("put: %w", queue.ErrMaybeTwice))
	l.put("failed-none", "", errors.New("connection lost"))
	for _, it := range []string{"ok-twice", "ok-twice", "maybe-twice", "maybe-twice", "stranger"} {
		require.NoError(t, l.deliver(context.Background(), it))
	}
	lost, unexplained, extra := l.check()
	assert.ElementsMatch(t, []string{"ok-lost", "delivered but never put: stranger"}, lost)
	assert.Equal(t, 2, unexplained, "ok-twice's second delivery and the stranger")
	assert.Equal(t, 2, extra)

	l.report(fmt.Errorf("consume: %w", &queue.NotRemovedError{Path: "/q/queue-0000000001", Reason: "lock gone"}))
	_, unexplained, _ = l.check()
	assert.Equal(t, 1, unexplained, "a not-removed report of ok-twice's node explains its duplicate")

	// A report names its item: it explains a duplicate of that item only, not of another.
	l = newQueueLedger()
	l.put("a", "/q/queue-0000000010", nil)
	l.put("b", "/q/queue-0000000011", nil)
	for _, it := range []string{"a", "b", "b"} {
		require.NoError(t, l.deliver(context.Background(), it))
	}
	l.report(&queue.NotRemovedError{Path: "/q/queue-0000000010", Reason: "lock gone"})
	_, unexplained, _ = l.check()
	assert.Equal(t, 1, unexplained, "a's not-removed report taken for b's duplicate")

	// A report naming a node no put returned (a copy of an item put perhaps twice, or of a
	// failed put) explains one duplicate of any item whose node is not known.
	l = newQueueLedger()
	l.put("c", "", errors.New("connection lost"))
	for _, it := range []string{"c", "c", "c"} {
		require.NoError(t, l.deliver(context.Background(), it))
	}
	_, unexplained, _ = l.check()
	assert.Equal(t, 1, unexplained, "a failed put's item delivered three times")
	l.report(&queue.NotRemovedError{Path: "/q/queue-0000000099", Reason: "lock gone"})
	_, unexplained, _ = l.check()
	assert.Zero(t, unexplained, "the report of an unknown node explains it")
}
