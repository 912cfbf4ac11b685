// Command queue shows the distributed queue of package recipes/queue (Curator's
// DistributedQueue with a lock path) across processes: two producer processes queue
// twenty jobs; a consumer process takes one and is killed (SIGKILL) while working on it;
// two more consumer processes then work through the queue. The killed consumer's job is
// not lost: its lock node goes with its session, and another consumer does it. Every job
// is done exactly once, and the queue is empty at the end.
//
//	go run ./examples/queue                     # on an embedded ZooKeeper
//	go run ./examples/queue -connect host:2181  # on yours (uses /examples/queue)
//
// The program runs itself again for each producer and consumer, with the role in the
// environment variable QUEUE_EXAMPLE_ROLE.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"sort"
	"strings"
	"time"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/recipes/queue"
	"github.com/zoocurator/zoocurator/zktest"
)

const (
	queuePath = "/examples/queue/jobs"
	lockPath  = "/examples/queue/locks" // Curator's lockPath: safe consumption
	producers = 2
	perProd   = 10
	roleEnv   = "QUEUE_EXAMPLE_ROLE"
)

func main() {
	if role := os.Getenv(roleEnv); role != "" {
		os.Exit(runRole(role))
	}
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

// sessionTimeout is how long the server keeps the session of a consumer that died, and
// with it the lock node of the job it was doing: the job goes back to the others after
// that long. Shorter is a faster take-over; too short and a pause costs a live consumer
// its jobs (they are then done twice).
const sessionTimeout = 2 * time.Second

// newClient connects a client to ZooKeeper with the options this example relies on.
func newClient(ctx context.Context, connect string) (*framework.Client, error) {
	c, err := framework.Connect(ctx, connect, framework.WithSessionTimeout(sessionTimeout))
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", connect, err)
	}
	return c, nil
}

func newQueue(c *framework.Client) (*queue.Queue[string], error) {
	return queue.New(c, queuePath, queue.String{}, queue.WithLockPath(lockPath))
}

// runRole is a child process: "produce <n>", "consume <name>" or "die <name>". It prints
// what it does on stdout, one line each, for the parent to read.
func runRole(role string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	f := strings.Fields(role)
	if len(f) != 2 {
		fmt.Fprintln(os.Stderr, "bad role", role)
		return 2
	}
	c, err := newClient(ctx, os.Getenv("ZK_CONNECT"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer c.Close()
	q, err := newQueue(c)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	switch f[0] {
	case "produce":
		for k := range perProd {
			if _, err := q.Put(ctx, fmt.Sprintf("job-%s.%d", f[1], k)); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		fmt.Println("put", perProd)
		return 0
	case "die":
		// Take one job and never finish it: the parent kills this process.
		err := q.ConsumeOne(ctx, func(ctx context.Context, job string) error {
			fmt.Println("working", job)
			<-ctx.Done()
			return ctx.Err()
		})
		fmt.Fprintln(os.Stderr, "consumer", f[1], "was not killed:", err)
		return 1
	case "consume":
		// Work until stdin closes (the parent's signal to stop).
		go func() { _, _ = io.Copy(io.Discard, os.Stdin); cancel() }()
		err := q.Consume(ctx, func(ctx context.Context, job string) error {
			fmt.Println("done", job)
			return nil
		})
		if err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	fmt.Fprintln(os.Stderr, "bad role", role)
	return 2
}

// child is a running role: its process and its output lines.
type child struct {
	name  string
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string // closed at the end of its output
}

func startChild(ctx context.Context, connect, name, role string) (*child, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), roleEnv+"="+role, "ZK_CONNECT="+connect)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := &child{name: name, cmd: cmd, stdin: stdin, lines: make(chan string, 64)}
	go func() {
		defer close(ch.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			ch.lines <- sc.Text()
		}
	}()
	return ch, nil
}

// next returns the child's next line; ok is false at the end of its output.
func (ch *child) next(ctx context.Context) (line string, ok bool, err error) {
	select {
	case line, ok = <-ch.lines:
		return line, ok, nil
	case <-ctx.Done():
		return "", false, ctx.Err()
	}
}

// finish waits for the end of the child's output and its exit.
func (ch *child) finish(ctx context.Context) error {
	for {
		_, ok, err := ch.next(ctx)
		if err != nil {
			return err
		}
		if !ok {
			return ch.cmd.Wait()
		}
	}
}

func run(ctx context.Context, connect string, w io.Writer) error {
	out := log.New(w, "", 0)
	c, err := newClient(ctx, connect)
	if err != nil {
		return err
	}
	defer c.Close()
	q, err := newQueue(c)
	if err != nil {
		return err
	}

	// Two producer processes.
	var prods []*child
	for i := range producers {
		p, err := startChild(ctx, connect, fmt.Sprint("producer ", i+1), fmt.Sprint("produce ", i+1))
		if err != nil {
			return err
		}
		prods = append(prods, p)
	}
	for _, p := range prods {
		if err := p.finish(ctx); err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
	}
	items, err := q.Items(ctx)
	if err != nil {
		return err
	}
	out.Printf("%d producer processes queued %d jobs", producers, len(items))

	// A consumer that is killed mid-job.
	dying, err := startChild(ctx, connect, "consumer A", "die A")
	if err != nil {
		return err
	}
	line, _, err := dying.next(ctx)
	if err != nil {
		return err
	}
	victim, ok := strings.CutPrefix(line, "working ")
	if !ok {
		return fmt.Errorf("consumer A said %q", line)
	}
	if err := dying.cmd.Process.Kill(); err != nil {
		return err
	}
	_ = dying.finish(ctx) // killed: its exit status says so
	out.Printf("consumer A killed (SIGKILL) while working on %s", victim)

	// Two consumers work through the queue, the killed consumer's job included once its
	// session has expired.
	done := map[string][]string{}
	total := producers * perProd
	var cons []*child
	for _, name := range []string{"B", "C"} {
		cc, err := startChild(ctx, connect, "consumer "+name, "consume "+name)
		if err != nil {
			return err
		}
		cons = append(cons, cc)
	}
	merged := make(chan [2]string, 4*producers*perProd) // room for every line: the readers never block
	for _, cc := range cons {
		go func() {
			for l := range cc.lines {
				merged <- [2]string{cc.name, l}
			}
		}()
	}
	count := 0
	for count < total {
		select {
		case m := <-merged:
			if job, ok := strings.CutPrefix(m[1], "done "); ok {
				done[job] = append(done[job], m[0])
				count++
				if job == victim {
					out.Printf("%s did %s, the killed consumer's job", m[0], job)
				}
			}
		case <-ctx.Done():
			return fmt.Errorf("%d of %d jobs done: %w", count, total, ctx.Err())
		}
	}
	for _, cc := range cons {
		_ = cc.stdin.Close() // stop
	}
	for _, cc := range cons {
		if err := cc.cmd.Wait(); err != nil {
			return fmt.Errorf("%s: %w", cc.name, err)
		}
	}
	var twice []string
	for job, by := range done {
		if len(by) != 1 {
			twice = append(twice, job)
		}
	}
	sort.Strings(twice)
	if len(done) != total || len(twice) > 0 {
		return fmt.Errorf("%d distinct jobs done of %d; done more than once: %v", len(done), total, twice)
	}
	out.Printf("all %d jobs done, each exactly once", total)
	left, err := q.Items(ctx)
	if err != nil {
		return err
	}
	out.Printf("jobs left in the queue: %d", len(left))
	return c.Delete(ctx, "/examples/queue", framework.WithChildren())
}
