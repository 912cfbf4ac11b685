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

// stdEntry is one run of the standard set.
type stdEntry struct {
	label      string
	workload   string
	clients    int
	perClient  int
	localBatch int
}

// standardSet is what `make bench` runs, side by side on one server: the pairs that the
// targets of issue 8 compare, then every other recipe's workload at 4x2 (compared with
// mutex 4x2, and broken down by request kind: issue 8 asks that each request be one the
// algorithm needs).
var standardSet = []stdEntry{
	{"floor 1x1", "floor", 1, 1, 1},
	{"mutex 1x1", "mutex", 1, 1, 1},
	{"gozk-lock 4x2", "gozk-lock", 4, 2, 1},
	{"mutex 4x2", "mutex", 4, 2, 1},
	{"mutex 4x8", "mutex", 4, 8, 1},
	{"mutex-shared 4x8", "mutex-shared", 4, 8, 1},
	{"mutex-shared 4x8 batch 8", "mutex-shared", 4, 8, 8},
	{"semmutex 4x2", "semmutex", 4, 2, 1},
	{"semaphore 4x2", "semaphore", 4, 2, 1},
	{"rwread 4x2", "rwread", 4, 2, 1},
	{"rwmixed 4x2", "rwmixed", 4, 2, 1},
	{"multilock 4x2", "multilock", 4, 2, 1},
	{"doublebarrier 4x2", "doublebarrier", 4, 2, 1},
}

// recipeEntries are the labels of standardSet shown against mutex 4x2 in the table.
var recipeEntries = []string{"semmutex 4x2", "semaphore 4x2", "rwread 4x2", "rwmixed 4x2", "multilock 4x2", "doublebarrier 4x2"}

func (s stdEntry) config(base config, ops int) config {
	c := base
	c.workload, c.clients, c.perClient, c.localBatch, c.ops = s.workload, s.clients, s.perClient, s.localBatch, ops
	return c
}

// runStandard runs the standard set cfg.repeat times, round after round (so that a drift of
// the machine's load spreads over every entry), writes each run's JSON line, then the
// table and the targets computed from each entry's median run by ops/s. Violations make
// it fail; missed targets do not (they are reported).
func runStandard(ctx context.Context, cfg config, stdout, log io.Writer) error {
	if cfg.warmup {
		ops := max(cfg.ops/10, 64)
		fmt.Fprintf(log, "zkbench: warm-up: each entry with %d ops, not reported\n", ops)
		for _, s := range standardSet {
			if _, err := execute(ctx, s.config(cfg, ops), log); err != nil {
				return fmt.Errorf("warm-up %s: %w", s.label, err)
			}
		}
	}
	runs := make(map[string][]result, len(standardSet))
	violations := int64(0)
	for round := 1; round <= cfg.repeat; round++ {
		fmt.Fprintf(log, "zkbench: round %d of %d\n", round, cfg.repeat)
		for _, s := range standardSet {
			r, err := execute(ctx, s.config(cfg, cfg.ops), log)
			if err != nil {
				return fmt.Errorf("%s: %w", s.label, err)
			}
			if err := writeLine(stdout, r); err != nil {
				return err
			}
			runs[s.label] = append(runs[s.label], r)
			violations += r.Violations
		}
	}
	medians := make(map[string]result, len(runs))
	for label, rs := range runs {
		slices.SortFunc(rs, func(a, b result) int { return cmp.Compare(a.OpsPerS, b.OpsPerS) })
		medians[label] = rs[len(rs)/2]
	}
	printTable(stdout, medians, cfg.repeat)
	if violations > 0 {
		return fmt.Errorf("%d violations of mutual exclusion", violations)
	}
	return nil
}

func printTable(w io.Writer, res map[string]result, repeat int) {
	fmt.Fprintln(w)
	if repeat > 1 {
		fmt.Fprintf(w, "median of %d runs by ops/s (each run's line is above)\n", repeat)
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "run\timpl\tops\tops/s\tp50 µs\tp99 µs\treq/op\tmax nodes\tviolations\t")
	for _, s := range standardSet {
		r := res[s.label]
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%d\t%d\t%s\t%s\t%d\t\n", s.label, r.Impl, r.Ops, r.OpsPerS,
			r.P50us, r.P99us, optFloat(r.RequestsPerOp), optInt(r.MaxNodes), r.Violations)
	}
	tw.Flush()

	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "target (issue 8)\tmeasured\twanted\t")
	ratio := func(a, b string) float64 { return res[a].OpsPerS / res[b].OpsPerS }
	row := func(name, measured, wanted string, met bool) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", name, measured, wanted, metText(met))
	}
	r := ratio("mutex 1x1", "floor 1x1")
	row("mutex 1x1 / floor 1x1, ops/s", fmt.Sprintf("%.2fx", r), ">= 0.9x", r >= 0.9)
	r = ratio("mutex 4x2", "gozk-lock 4x2")
	row("mutex 4x2 / gozk-lock 4x2, ops/s", fmt.Sprintf("%.2fx", r), ">= 1.3x", r >= 1.3)
	if q := res["mutex 4x2"].RequestsPerOp; q != nil {
		row("mutex 4x2, requests per acquisition", fmt.Sprintf("%.2f", *q), "<= 5", *q <= 5)
	}
	sh, mu := res["mutex-shared 4x8"], res["mutex 4x8"]
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
	r = ratio("mutex-shared 4x8 batch 8", "mutex 4x8")
	row("mutex-shared 4x8 batch 8 / mutex 4x8, ops/s", fmt.Sprintf("%.2fx", r), ">= 4x", r >= 4)
	if q := res["mutex-shared 4x8 batch 8"].RequestsPerOp; q != nil {
		row("mutex-shared 4x8 batch 8, requests per acquisition", fmt.Sprintf("%.2f", *q), "<= 1", *q <= 1)
	}
	tw.Flush()

	// The other recipes have no ratio target; issue 8 asks for no request the algorithm
	// does not need, so each is shown with its requests by kind (the package docs
	// justify them), and its speed next to the mutex's on the same shape.
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "other recipes\tops/s vs mutex 4x2\treq/op\trequests per op by kind")
	for _, label := range recipeEntries {
		r := res[label]
		note := ""
		if r.Rounds > 0 {
			note = fmt.Sprintf(" (op: one member's enter+leave; %d rounds of %d)", r.Rounds, r.Members)
		}
		fmt.Fprintf(tw, "%s\t%.2fx\t%s\t%s%s\n", label, ratio(label, "mutex 4x2"), optFloat(r.RequestsPerOp),
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
