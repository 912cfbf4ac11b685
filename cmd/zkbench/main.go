// Command zkbench measures the recipes against a ZooKeeper server: one named workload per
// run, reported as one JSON line on stdout (progress and logs on stderr). The workloads,
// the command line and the fields of the line are fixed by docs/benchmark.md, so
// that other ZooKeeper client libraries can be measured with the same definitions.
//
//	zkbench --connect HOST:PORT --workload mutex --clients 4 --per-client 2 --ops 2000
//	zkbench --impl curator --workload mutex ...   # the same on Curator 5.4, in a JVM
//	zkbench --impl gozk --workload mutex ...      # the same on go-zookeeper's zk.Lock
//	zkbench --standard            # the standard set on an embedded server, with a table
//
// Without --connect it starts an embedded ZooKeeper (zktest.StartServer) for the run.
//
// Every line carries server_requests_per_op: the packets the server received during the
// run (mntr's zk_packets_received on every server of the connect string, before and
// after), less zkbench's own sampling requests, per op. It counts every implementation
// the same way, pings included, and is exact only when nothing else uses the server.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/zktest"
)

// config is one run's command line.
type config struct {
	connect        string
	impl           string
	workload       string
	clients        int
	perClient      int
	ops            int
	localBatch     int
	sessionTimeout time.Duration
	timeout        time.Duration
	sampleEvery    time.Duration
	standard       bool
	warmup         bool
	repeat         int
	curatorWarmup  int
	waiters        int // scale only
	nodes          int // cache-init only
	cpuProfile     string
}

// errUsage marks an error in the command line (exit status 2).
var errUsage = errors.New("usage")

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case err == nil:
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		fmt.Fprintln(os.Stderr, "zkbench:", err)
		os.Exit(2)
	default:
		fmt.Fprintln(os.Stderr, "zkbench:", err)
		os.Exit(1)
	}
}

// run parses args, runs what they ask for and writes the JSON line(s) to stdout.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	if cfg.connect == "" {
		fmt.Fprintln(stderr, "zkbench: no --connect given: starting an embedded ZooKeeper")
		srv, err := zktest.StartServer()
		if err != nil {
			return fmt.Errorf("starting an embedded ZooKeeper: %w", err)
		}
		defer srv.Close()
		cfg.connect = srv.ConnectString()
		fmt.Fprintln(stderr, "zkbench: embedded ZooKeeper at", cfg.connect)
	}
	if cfg.cpuProfile != "" {
		f, err := os.Create(cfg.cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	if cfg.standard {
		return runStandard(ctx, cfg, stdout, stderr) // --timeout bounds each run
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	if cfg.workload == cacheInitWorkload {
		res, err := executeCacheInit(ctx, cfg, stderr)
		if err != nil {
			return err
		}
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	if cfg.workload == "scale" {
		res, err := executeScale(ctx, cfg, stderr)
		if err != nil {
			return err
		}
		b, err := json.Marshal(res)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	res, err := execute(ctx, cfg, stderr)
	if err != nil {
		return err
	}
	return writeLine(stdout, res)
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var cfg config
	fs := flag.NewFlagSet("zkbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.connect, "connect", "", "ZooKeeper connect string HOST:PORT[,HOST:PORT...]; absent: start an embedded server")
	fs.StringVar(&cfg.impl, "impl", implOurs, "implementation: zoocurator, curator (Curator 5.4 in a JVM: "+
		strings.Join(curatortest.BenchWorkloads, ", ")+"), or gozk (go-zookeeper: mutex is its zk.Lock)")
	fs.StringVar(&cfg.workload, "workload", "", "workload to run: "+workloadNames())
	fs.IntVar(&cfg.clients, "clients", 1, "C: sessions (one client each)")
	fs.IntVar(&cfg.perClient, "per-client", 1, "G: goroutines per session")
	fs.IntVar(&cfg.ops, "ops", 2000, "N: total operations, split evenly over the C×G workers (per run with --standard)")
	fs.IntVar(&cfg.localBatch, "local-batch", 1, "mutex-shared only: local hand-overs in a row before a waiting process gets in (1: fair)")
	fs.DurationVar(&cfg.sessionTimeout, "session-timeout", 30*time.Second, "session timeout of every session")
	fs.DurationVar(&cfg.timeout, "timeout", 10*time.Minute, "give up a run after this long (with --standard: each run of the set)")
	fs.DurationVar(&cfg.sampleEvery, "sample-every", 20*time.Millisecond, "how often max_nodes counts the lock's children")
	fs.BoolVar(&cfg.standard, "standard", false, "run the standard set side by side and print a table (make bench)")
	fs.BoolVar(&cfg.warmup, "warmup", true, "with --standard: run each entry small first, unreported, to warm the server up")
	fs.IntVar(&cfg.repeat, "repeat", 3, "with --standard: rounds of the whole set; the table shows each entry's median")
	fs.StringVar(&cfg.cpuProfile, "cpuprofile", "", "write the client's CPU profile of the run to this file (go tool pprof)")
	fs.IntVar(&cfg.waiters, "waiters", 1000, "scale only: goroutines queued on the one lock, each with its own mutex, over --clients sessions")
	fs.IntVar(&cfg.nodes, "nodes", 10101, "cache-init only: nodes in the tree the cache starts on")
	fs.IntVar(&cfg.curatorWarmup, "curator-warmup", 400, "--impl curator: ops run in the JVM first, unreported, on a path of their own, so that the JIT has compiled the run's code (0: none)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: zkbench [--connect HOST:PORT] [--impl zoocurator|curator|gozk] --workload NAME --clients C --per-client G --ops N")
		fmt.Fprintln(stderr, "       zkbench --standard [--repeat R]")
		fs.PrintDefaults()
		fmt.Fprintln(stderr, "\nworkloads (docs/benchmark.md; the op's latency is p50_us/p99_us):")
		printWorkloads(stderr)
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if cfg.ops < 1 || cfg.clients < 1 || cfg.perClient < 1 {
		return cfg, fmt.Errorf("%w: --ops, --clients and --per-client must be at least 1", errUsage)
	}
	if cfg.sessionTimeout <= 0 || cfg.timeout <= 0 || cfg.sampleEvery <= 0 {
		return cfg, fmt.Errorf("%w: --session-timeout, --timeout and --sample-every must be positive", errUsage)
	}
	if cfg.curatorWarmup < 0 {
		return cfg, fmt.Errorf("%w: --curator-warmup must not be negative", errUsage)
	}
	impl, ok := implNames[cfg.impl]
	if !ok {
		return cfg, fmt.Errorf("%w: unknown --impl %q (zoocurator, curator or gozk)", errUsage, cfg.impl)
	}
	cfg.impl = impl
	if cfg.standard {
		if cfg.repeat < 1 {
			return cfg, fmt.Errorf("%w: --repeat must be at least 1", errUsage)
		}
		if cfg.workload != "" || cfg.impl != implOurs {
			return cfg, fmt.Errorf("%w: --standard runs its own set; do not give --workload or --impl", errUsage)
		}
		return cfg, nil
	}
	if cfg.workload == "" {
		return cfg, fmt.Errorf("%w: --workload is required (one of %s), or --standard", errUsage, workloadNames())
	}
	return cfg, checkWorkload(cfg)
}

// checkWorkload validates the workload-specific parts of cfg.
func checkWorkload(cfg config) error {
	if cfg.workload == cacheInitWorkload {
		if cfg.impl != implOurs && cfg.impl != implCurator {
			return fmt.Errorf("%w: cache-init runs on zoocurator or curator", errUsage)
		}
		if cfg.nodes < 1 || cfg.clients != 1 || cfg.perClient != 1 {
			return fmt.Errorf("%w: cache-init needs --nodes at least 1 and one session (no --clients, --per-client)", errUsage)
		}
		return nil
	}
	if _, err := lookup(cfg.impl, cfg.workload); err != nil {
		return err
	}
	if cfg.localBatch < 1 || cfg.localBatch > 255 {
		return fmt.Errorf("%w: --local-batch %d not in [1, 255]", errUsage, cfg.localBatch)
	}
	if cfg.localBatch > 1 && cfg.workload != "mutex-shared" {
		return fmt.Errorf("%w: --local-batch applies to mutex-shared only", errUsage)
	}
	if cfg.workload == "scale" {
		if cfg.impl != implOurs {
			return fmt.Errorf("%w: scale runs on zoocurator only", errUsage)
		}
		if cfg.waiters < 1 || cfg.perClient != 1 {
			return fmt.Errorf("%w: scale needs --waiters at least 1 and no --per-client", errUsage)
		}
		return nil
	}
	if w := cfg.clients * cfg.perClient; cfg.ops < w {
		return fmt.Errorf("%w: --ops %d is fewer than the %d workers", errUsage, cfg.ops, w)
	}
	return nil
}
