package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
)

// stdEntry is one shape of the standard set, run on each of its implementations.
type stdEntry struct {
	label      string
	workload   string
	clients    int
	perClient  int
	localBatch int
	impls      []string // implOurs first where it is one
}

var (
	all3    = []string{implOurs, implCurator, implGoZK}
	both    = []string{implOurs, implCurator}
	ours    = []string{implOurs}
	refOnly = []string{implGoZK}
)

// standardSet is what `make bench` runs, side by side on one server: the physical limit
// (write) and the protocol floor, then each recipe on zoocurator and Curator 5.4 (and the
// mutex on go-zookeeper's lock), in the shapes the performance targets name (docs/performance.md).
var standardSet = []stdEntry{
	{"write 1x1", "write", 1, 1, 1, refOnly},
	{"floor 1x1", "floor", 1, 1, 1, refOnly},
	{"mutex 1x1", "mutex", 1, 1, 1, all3},
	{"mutex 4x2", "mutex", 4, 2, 1, all3},
	{"mutex 4x8", "mutex", 4, 8, 1, ours},
	{"mutex-shared 4x8", "mutex-shared", 4, 8, 1, ours},
	{"mutex-shared 4x8 batch 8", "mutex-shared", 4, 8, 8, ours},
	{"semmutex 4x2", "semmutex", 4, 2, 1, both},
	{"semaphore 4x2", "semaphore", 4, 2, 1, both},
	{"multilock 1x1", "multilock", 1, 1, 1, both},
	{"multilock 4x2", "multilock", 4, 2, 1, both},
	{"rwread 4x2", "rwread", 4, 2, 1, both},
	{"rwmixed 4x2", "rwmixed", 4, 2, 1, both},
	{"doublebarrier 4x2", "doublebarrier", 4, 2, 1, both},
	{"counter-inc 1x1", "counter-inc", 1, 1, 1, both},
	{"counter-inc 4x2", "counter-inc", 4, 2, 1, both},
	{"queue-put 2x2", "queue-put", 2, 2, 1, both},
	{"queue-take 2x2", "queue-take", 2, 2, 1, both},
}

// vsCurator are the targets against Curator: zoocurator's ops/s at least this many times Curator's.
var vsCurator = map[string]float64{
	"mutex 1x1": 1.5, "semmutex 4x2": 2, "semaphore 4x2": 2, "multilock 1x1": 2,
	"rwread 4x2": 2, "rwmixed 4x2": 2, "doublebarrier 4x2": 2, "counter-inc 1x1": 2, "counter-inc 4x2": 2,
}

// vsWrite are the targets against the physical limit: zoocurator's ops/s at least
// this fraction of write 1x1's.
var vsWrite = map[string]float64{"mutex 4x2": 0.85}

// recipeEntries are the labels shown against mutex 4x2 with their requests by kind.
var recipeEntries = []string{"semmutex 4x2", "semaphore 4x2", "multilock 4x2", "rwread 4x2", "rwmixed 4x2",
	"doublebarrier 4x2", "counter-inc 4x2"}

func (s stdEntry) config(base config, impl string, ops int) config {
	c := base
	c.impl, c.workload, c.clients, c.perClient, c.localBatch, c.ops = impl, s.workload, s.clients, s.perClient, s.localBatch, ops
	return c
}

// runKey names one entry's run on one implementation.
type runKey struct{ label, impl string }

// runStandard runs the standard set cfg.repeat times, round after round (so that a drift of
// the machine's load spreads over every entry), each entry on each of its implementations
// in turn, writes each run's JSON line, then the tables and the targets computed from each
// run's median by ops/s. Violations make it fail; missed targets do not (they are
// reported). The warm-up round leaves Curator out: each Curator run warms its own JVM up
// (--curator-warmup). A Curator run that fails (Curator's own bug, as its double barrier's
// stall) is reported and counted in the table, and the set goes on; any other failure
// ends the set.
func runStandard(ctx context.Context, cfg config, stdout, log io.Writer) error {
	if cfg.warmup {
		ops := max(cfg.ops/10, 64)
		fmt.Fprintf(log, "zkbench: warm-up: each entry with %d ops, not reported\n", ops)
		for _, s := range standardSet {
			for _, impl := range s.impls {
				if impl == implCurator {
					continue
				}
				if _, err := executeBounded(ctx, s.config(cfg, impl, ops), log); err != nil {
					return fmt.Errorf("warm-up %s on %s: %w", s.label, impl, err)
				}
			}
		}
	}
	runs := make(map[runKey][]result)
	failed := make(map[runKey][]string)
	violations := int64(0)
	for round := 1; round <= cfg.repeat; round++ {
		fmt.Fprintf(log, "zkbench: round %d of %d\n", round, cfg.repeat)
		for _, s := range standardSet {
			for _, impl := range s.impls {
				k := runKey{s.label, impl}
				r, err := executeBounded(ctx, s.config(cfg, impl, cfg.ops), log)
				if err != nil && impl == implCurator && ctx.Err() == nil {
					fmt.Fprintf(log, "zkbench: %s on %s failed, going on without it: %v\n", s.label, impl, err)
					failed[k] = append(failed[k], firstLine(err.Error()))
					continue
				}
				if err != nil {
					return fmt.Errorf("%s on %s: %w", s.label, impl, err)
				}
				if err := writeLine(stdout, r); err != nil {
					return err
				}
				runs[k] = append(runs[k], r)
				violations += r.Violations
			}
		}
	}
	medians := make(map[runKey]result, len(runs))
	for k, rs := range runs {
		slices.SortFunc(rs, func(a, b result) int { return cmp.Compare(a.OpsPerS, b.OpsPerS) })
		medians[k] = rs[len(rs)/2]
	}
	printTable(stdout, medians, cfg.repeat)
	printFailures(stdout, failed)
	if violations > 0 {
		return fmt.Errorf("%d violations of mutual exclusion", violations)
	}
	return nil
}

// printFailures lists the runs that failed, by entry.
func printFailures(w io.Writer, failed map[runKey][]string) {
	if len(failed) == 0 {
		return
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "failed runs (left out of the medians above):")
	for _, s := range standardSet {
		for _, impl := range s.impls {
			for _, msg := range failed[runKey{s.label, impl}] {
				fmt.Fprintf(w, "  %s on %s: %s\n", s.label, impl, msg)
			}
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// executeBounded is execute within cfg.timeout.
func executeBounded(ctx context.Context, cfg config, log io.Writer) (result, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	return execute(ctx, cfg, log)
}

func printTable(w io.Writer, res map[runKey]result, repeat int) {
	fmt.Fprintln(w)
	if repeat > 1 {
		fmt.Fprintf(w, "median of %d runs by ops/s (each run's line is above); all on one server, one after another\n", repeat)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\timpl\tops\tops/s\tp50 µs\tp99 µs\treq/op client\treq/op server\tmax nodes\tviolations\t")
	for _, s := range standardSet {
		for _, impl := range s.impls {
			r, ok := res[runKey{s.label, impl}]
			if !ok {
				continue // every run of it failed: see the list of failures
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%d\t%d\t%s\t%s\t%s\t%d\t\n", s.label, r.Impl, r.Ops, r.OpsPerS,
				r.P50us, r.P99us, optFloat(r.RequestsPerOp), optFloat(r.ServerRequestsPerOp), optInt(r.MaxNodes), r.Violations)
		}
	}
	tw.Flush()

	// Side by side: each shape's ops/s on each implementation, zoocurator's ratio to
	// Curator's and to the physical limit (write 1x1), and the target.
	writeRate := res[runKey{"write 1x1", implGoZK}].OpsPerS
	fmt.Fprintln(w)
	fmt.Fprintf(w, "side by side, ops/s (physical limit: write 1x1 = %.0f ops/s, one committed write per op)\n", writeRate)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "run\tzoocurator\tcurator\tgo-zookeeper\tvs curator\tvs write 1x1\ttarget\t")
	for _, s := range standardSet {
		if !slices.Contains(s.impls, implOurs) {
			continue
		}
		cell := func(impl string) string {
			if r, ok := res[runKey{s.label, impl}]; ok {
				return fmt.Sprintf("%.0f", r.OpsPerS)
			}
			return "-"
		}
		o := res[runKey{s.label, implOurs}].OpsPerS
		vsC := "-"
		if c, ok := res[runKey{s.label, implCurator}]; ok && c.OpsPerS > 0 {
			vsC = fmt.Sprintf("%.2fx", o/c.OpsPerS)
		}
		vsW := "-"
		if s.clients*s.perClient > 1 && writeRate > 0 {
			vsW = fmt.Sprintf("%.2fx", o/writeRate)
		}
		target := "-"
		if want, ok := vsCurator[s.label]; ok {
			c := res[runKey{s.label, implCurator}].OpsPerS
			target = fmt.Sprintf(">= %.2gx curator: %s", want, metText(c > 0 && o >= want*c))
		}
		if want, ok := vsWrite[s.label]; ok {
			target = fmt.Sprintf(">= %.2gx write 1x1: %s", want, metText(writeRate > 0 && o >= want*writeRate))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.label, cell(implOurs), cell(implCurator), cell(implGoZK), vsC, vsW, target)
	}
	tw.Flush()

	ours := func(label string) result { return res[runKey{label, implOurs}] }
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "mutex target\tmeasured\twanted\t")
	ratio := func(a, b result) float64 { return a.OpsPerS / b.OpsPerS }
	row := func(name, measured, wanted string, met bool) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, measured, wanted, metText(met))
	}
	r := ratio(ours("mutex 1x1"), res[runKey{"floor 1x1", implGoZK}])
	row("mutex 1x1 / floor 1x1, ops/s", fmt.Sprintf("%.2fx", r), ">= 0.9x", r >= 0.9)
	r = ratio(ours("mutex 4x2"), res[runKey{"mutex 4x2", implGoZK}])
	row("mutex 4x2 / go-zookeeper's lock 4x2, ops/s", fmt.Sprintf("%.2fx", r), ">= 1.3x", r >= 1.3)
	if q := ours("mutex 4x2").RequestsPerOp; q != nil {
		row("mutex 4x2, requests per acquisition", fmt.Sprintf("%.2f", *q), "<= 5", *q <= 5)
	}
	sh, mu := ours("mutex-shared 4x8"), ours("mutex 4x8")
	if sh.RequestsPerOp != nil && mu.RequestsPerOp != nil {
		row("mutex-shared 4x8 vs mutex 4x8, requests per acquisition",
			fmt.Sprintf("%.2f vs %.2f", *sh.RequestsPerOp, *mu.RequestsPerOp), "no more",
			*sh.RequestsPerOp <= *mu.RequestsPerOp)
	}
	if sh.MaxNodes != nil && mu.MaxNodes != nil {
		row("mutex-shared 4x8 vs mutex 4x8, max lock nodes seen",
			fmt.Sprintf("%d vs %d", *sh.MaxNodes, *mu.MaxNodes), fmt.Sprintf("<= %d (one per session)", sh.Clients),
			*sh.MaxNodes <= sh.Clients)
	}
	r = ratio(ours("mutex-shared 4x8 batch 8"), mu)
	row("mutex-shared 4x8 batch 8 / mutex 4x8, ops/s", fmt.Sprintf("%.2fx", r), ">= 4x", r >= 4)
	if q := ours("mutex-shared 4x8 batch 8").RequestsPerOp; q != nil {
		row("mutex-shared 4x8 batch 8, requests per acquisition", fmt.Sprintf("%.2f", *q), "<= 1", *q <= 1)
	}
	tw.Flush()

	// A recipe sends no request its algorithm does not need, so each other recipe is
	// shown with its requests by kind (the package docs justify them), and its speed next
	// to the mutex's on the same shape.
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "other recipes\tops/s vs mutex 4x2\treq/op\trequests per op by kind")
	for _, label := range recipeEntries {
		r := ours(label)
		note := ""
		if r.Rounds > 0 {
			note = fmt.Sprintf(" (op: one member's enter+leave; %d rounds of %d)", r.Rounds, r.Members)
		}
		fmt.Fprintf(tw, "%s\t%.2fx\t%s\t%s%s\n", label, ratio(r, ours("mutex 4x2")), optFloat(r.RequestsPerOp),
			byKindText(r.RequestsByKind), note)
	}
	tw.Flush()
}

func byKindText(m map[string]float64) string {
	var parts []string
	for _, kind := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s %.2f", kind, m[kind]))
	}
	return strings.Join(parts, ", ")
}

func metText(met bool) string {
	if met {
		return "met"
	}
	return "NOT MET"
}

func optFloat(p *float64) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%.2f", *p)
}

func optInt(p *int) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf("%d", *p)
}
