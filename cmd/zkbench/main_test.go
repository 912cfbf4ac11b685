package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	"github.com/zoocurator/zoocurator/zktest"
)

// required are the fields docs/benchmark.md fixes, with the JSON type each must have.
var required = map[string]string{
	"impl": "string", "workload": "string", "clients": "number", "per_client": "number",
	"ops": "number", "seconds": "number", "ops_per_s": "number", "p50_us": "number",
	"p99_us": "number", "violations": "number",
}

func kind(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	}
	return "other"
}

// curatorPerClient is the workers per client a Curator run of workload gets here (0: the
// default 2). Curator 5.4's DistributedDoubleBarrier stalled here with 2×2 (CI of 332ad9d: a
// leave waited out CuratorBench's 60 s bound). Reading its enter shows a hang with three
// members or more: enter's watch on ready can fire before internalEnter lists the children;
// if two members have left by then, the members still there plus ready are fewer than
// memberQty, and because it was notified already it waits with no bound, its node left for
// the others' leave to wait on. Not reproduced here (3 000 rounds of 2×2 under
// stress-ng --cpu 2 passed). With two members the count is never short (a member counts
// itself and ready), so the test runs Curator's double barrier with 2×1: the driver is still
// checked and Curator's race is out of the test's way. zkbench --standard's 4×2 run can
// still meet it; it reports the failed Curator run and goes on.
func curatorPerClient(workload string) int {
	if workload == "doublebarrier" {
		return 1
	}
	return 0
}

// TestWorkloads runs every implemented workload small against a real server, on every
// implementation (Curator's in a real JVM), and checks the line: one line of JSON, every
// required field, no violation, the server's count of requests, and nothing left in
// ZooKeeper afterwards.
func TestWorkloads(t *testing.T) {
	leakcheck.Check(t)
	srv := zktest.NewServer(t)
	// long: a session timeout so long that no session pings during the run, so that the
	// server's count of a bare go-zookeeper workload is exactly what the client sent.
	long := []string{"--session-timeout", "2m"}
	cases := []struct {
		workload, impl string
		extra          []string
		localBatch     float64
		counted        bool
		perClient      int // 0: 2
	}{
		{"mutex", implOurs, nil, 0, true, 0},
		{"mutex-shared", implOurs, nil, 0, true, 0},
		{"mutex-shared", implOurs, []string{"--local-batch", "4"}, 4, true, 0},
		{"floor", implGoZK, long, 0, true, 0},
		{"write", implGoZK, long, 0, true, 0},
		{"gozk-lock", implGoZK, nil, 0, false, 0},
		{"mutex", implGoZK, []string{"--impl", "gozk"}, 0, false, 0},
		{"semmutex", implOurs, nil, 0, true, 0},
		{"semaphore", implOurs, nil, 0, true, 0},
		{"rwread", implOurs, nil, 0, true, 0},
		{"rwmixed", implOurs, nil, 0, true, 0},
		{"multilock", implOurs, nil, 0, true, 0},
		{"doublebarrier", implOurs, nil, 0, true, 0},
		{"counter-inc", implOurs, nil, 0, true, 0},
		{"queue-put", implOurs, nil, 0, true, 0},
		{"queue-take", implOurs, nil, 0, true, 0},
	}
	for _, w := range curatortest.BenchWorkloads {
		cases = append(cases, struct {
			workload, impl string
			extra          []string
			localBatch     float64
			counted        bool
			perClient      int // 0: 2
		}{w, implCurator, []string{"--impl", "curator", "--curator-warmup", "8"}, 0, false, curatorPerClient(w)})
	}
	for _, tc := range cases {
		t.Run(strings.Join(append([]string{tc.workload}, tc.extra...), " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // a JVM starts, connects and warms up: slow on a loaded machine
			defer cancel()
			perClient := tc.perClient
			if perClient == 0 {
				perClient = 2
			}
			args := append([]string{"--connect", srv.ConnectString(), "--workload", tc.workload,
				"--clients", "2", "--per-client", strconv.Itoa(perClient), "--ops", "40"}, tc.extra...)
			var stdout, stderr bytes.Buffer
			require.NoError(t, run(ctx, args, &stdout, &stderr), "stderr:\n%s", stderr.String())
			out := stdout.String()
			require.True(t, strings.HasSuffix(out, "\n"), "the line ends with a newline")
			require.Equal(t, 1, strings.Count(out, "\n"), "exactly one line on stdout: %q", out)

			var line map[string]any
			require.NoError(t, json.Unmarshal([]byte(out), &line))
			for name, typ := range required {
				v, ok := line[name]
				if assert.True(t, ok, "field %s missing in %s", name, out) {
					assert.Equal(t, typ, kind(v), "type of %s", name)
				}
			}
			assert.Equal(t, tc.impl, line["impl"])
			assert.Equal(t, tc.workload, line["workload"])
			assert.EqualValues(t, 2, line["clients"])
			assert.EqualValues(t, perClient, line["per_client"])
			assert.EqualValues(t, 40, line["ops"])
			assert.EqualValues(t, 0, line["violations"])
			assert.Greater(t, line["seconds"], 0.0)
			assert.Greater(t, line["ops_per_s"], 0.0)
			assert.LessOrEqual(t, line["p50_us"], line["p99_us"])
			if tc.localBatch > 0 {
				assert.Equal(t, tc.localBatch, line["local_batch"])
			} else {
				assert.NotContains(t, line, "local_batch")
			}
			rpo, ok := line["zk_requests_per_op"]
			assert.Equal(t, tc.counted, ok, "zk_requests_per_op present only when counted exactly")
			srpo, sok := line["server_requests_per_op"].(float64)
			assert.True(t, sok, "server_requests_per_op present for every implementation")
			switch tc.workload {
			case "floor":
				assert.EqualValues(t, 3, rpo, "floor is create, children, delete")
				assert.EqualValues(t, 3, srpo, "the server counts what the client sent, nothing of the sampler's or mntr's")
			case "write":
				assert.EqualValues(t, 1, rpo, "write is one setData")
				assert.EqualValues(t, 1, srpo, "the server counts what the client sent")
				assert.NotContains(t, line, "max_nodes")
			default:
				if ok {
					assert.Greater(t, rpo, 0.0)
					assert.GreaterOrEqual(t, srpo, rpo.(float64), "the server got every request the client counted")
				}
				assert.GreaterOrEqual(t, srpo, 1.0, "every op sends a request at least")
			}
			if tc.impl == implCurator {
				assert.EqualValues(t, 8, line["warmup_ops"], "--curator-warmup's ops ran first")
			} else {
				assert.NotContains(t, line, "warmup_ops")
			}
			if ok && tc.impl == implOurs {
				sum := 0.0
				for _, v := range line["zk_requests_per_op_by_kind"].(map[string]any) {
					sum += v.(float64)
				}
				assert.InDelta(t, rpo, sum, 0.01, "the kinds add up to zk_requests_per_op")
			} else {
				assert.NotContains(t, line, "zk_requests_per_op_by_kind")
			}
			if tc.workload == "doublebarrier" {
				assert.EqualValues(t, 2*perClient, line["members"], "C×G members a round")
				assert.EqualValues(t, 40/(2*perClient), line["rounds"], "ops / members")
			} else {
				assert.NotContains(t, line, "members")
				assert.NotContains(t, line, "rounds")
			}
			switch tc.workload {
			case "doublebarrier", "counter-inc", "write":
				assert.NotContains(t, line, "max_nodes")
			default:
				assert.Contains(t, line, "max_nodes")
			}

			left, err := zktest.Children(ctx, srv.ConnectString(), "/zkbench")
			require.NoError(t, err)
			assert.Empty(t, left, "the run's base path is deleted")
		})
	}
}

// TestUsage: unknown workloads and bad flags are usage errors, found before anything is
// started.
func TestUsage(t *testing.T) {
	ctx := context.Background()
	for _, args := range [][]string{
		{"--workload", "nosuch"},
		{"--workload", "mutex", "--local-batch", "4"},
		{"--workload", "mutex-shared", "--local-batch", "0"},
		{"--workload", "mutex", "--clients", "4", "--per-client", "2", "--ops", "4"},
		{"--standard", "--workload", "mutex"},
		{"--standard", "--impl", "curator"},
		{"--impl", "nosuch", "--workload", "mutex"},
		{"--impl", "curator", "--workload", "floor"},
		{"--impl", "curator", "--workload", "mutex-shared"},
		{"--impl", "gozk", "--workload", "semaphore"},
		{"--impl", "curator", "--workload", "mutex", "--curator-warmup", "-1"},
		{},
	} {
		var stdout, stderr bytes.Buffer
		err := run(ctx, append([]string{"--connect", "127.0.0.1:1"}, args...), &stdout, &stderr)
		assert.True(t, errors.Is(err, errUsage), "%v: %v", args, err)
		assert.Empty(t, stdout.String())
	}
}

// TestEveryWorkloadDefined: every workload can run and --help explains it.
func TestEveryWorkloadDefined(t *testing.T) {
	var stdout, stderr bytes.Buffer
	require.ErrorIs(t, run(context.Background(), []string{"--help"}, &stdout, &stderr), flag.ErrHelp)
	for name, w := range workloads {
		assert.True(t, w.prepare != nil || w.scale, "%s runs somehow", name)
		assert.NotEmpty(t, w.doc, name)
		assert.Contains(t, stderr.String(), "  "+name+" ", "--help describes %s", name)
	}
}

// TestCheckRW: rwmixed's check counts a writer overlapping anyone, and readers together.
func TestCheckRW(t *testing.T) {
	var e env
	e.checkRW(true)
	e.checkRW(false)
	e.readers.Add(2) // two readers inside
	e.checkRW(false)
	assert.EqualValues(t, 0, e.violations.Load(), "readers share")
	e.checkRW(true)
	assert.EqualValues(t, 1, e.violations.Load(), "a writer among readers")
	e.readers.Add(-2)
	e.writers.Add(1) // a writer inside
	e.checkRW(false)
	e.checkRW(true)
	assert.EqualValues(t, 3, e.violations.Load(), "a reader or a writer beside a writer")
}

func TestPercentile(t *testing.T) {
	ms := func(n ...int) []time.Duration {
		var d []time.Duration
		for _, x := range n {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1
	}
	for _, tc := range []struct {
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{nil, 0.5, 0},
		{ms(7), 0.99, 7 * time.Millisecond},
		{ms(1, 2), 0.5, 1 * time.Millisecond},
		{ms(1, 2, 3), 0.5, 2 * time.Millisecond},
		{ms(hundred...), 0.5, 50 * time.Millisecond},
		{ms(hundred...), 0.99, 99 * time.Millisecond},
	} {
		assert.Equal(t, tc.want, percentile(tc.sorted, tc.p), "p%v of %v", tc.p, tc.sorted)
	}
}

// TestStandardSet: every entry of the standard set runs on each of its implementations,
// and every target names an entry measured on what it compares.
func TestStandardSet(t *testing.T) {
	labels := map[string]stdEntry{}
	for _, s := range standardSet {
		assert.NotContains(t, labels, s.label, "labels are unique")
		labels[s.label] = s
		for _, impl := range s.impls {
			assert.NoError(t, checkWorkload(s.config(config{}, impl, 1000)), "%s on %s", s.label, impl)
		}
	}
	for label := range vsCurator {
		if assert.Contains(t, labels, label) {
			assert.Contains(t, labels[label].impls, implCurator, "%s: compared with Curator", label)
			assert.Contains(t, labels[label].impls, implOurs, label)
		}
	}
	for label := range vsWrite {
		assert.Contains(t, labels, label)
	}
	assert.Equal(t, []string{implGoZK}, labels["write 1x1"].impls, "the physical limit is bare go-zookeeper")
	assert.Contains(t, labels["mutex 1x1"].impls, implGoZK, "the mutex is compared with go-zookeeper's lock")
	assert.Contains(t, labels["mutex 4x2"].impls, implGoZK, "the mutex is compared with go-zookeeper's lock")
	for _, label := range recipeEntries {
		assert.Contains(t, labels, label)
	}
}

// TestPrintTable: the side-by-side table shows each shape on each implementation, the
// ratios to Curator and to the write floor, and whether the targets are met.
func TestPrintTable(t *testing.T) {
	res := map[runKey]result{}
	for _, s := range standardSet {
		for _, impl := range s.impls {
			res[runKey{s.label, impl}] = result{Impl: impl, Workload: s.workload, Clients: s.clients,
				PerClient: s.perClient, Ops: 100, OpsPerS: 300}
		}
	}
	res[runKey{"write 1x1", implGoZK}] = result{Impl: implGoZK, Workload: "write", OpsPerS: 1000}
	res[runKey{"mutex 4x2", implOurs}] = result{Impl: implOurs, Workload: "mutex", OpsPerS: 900}
	res[runKey{"mutex 1x1", implCurator}] = result{Impl: implCurator, Workload: "mutex", OpsPerS: 200}
	res[runKey{"semaphore 4x2", implCurator}] = result{Impl: implCurator, Workload: "semaphore", OpsPerS: 200}
	var out bytes.Buffer
	printTable(&out, res, 3)
	_, side, ok := strings.Cut(out.String(), "side by side")
	require.True(t, ok, "the side-by-side table is printed:\n%s", out.String())
	side, _, _ = strings.Cut(side, "\n\n")
	rows := map[string]string{}
	for _, l := range strings.Split(side, "\n") {
		if f := strings.Fields(l); len(f) > 2 {
			rows[strings.Join(f[:2], " ")] = strings.Join(f, " ")
		}
	}
	assert.Contains(t, out.String(), "write 1x1 = 1000 ops/s")
	assert.Equal(t, "mutex 4x2 900 300 300 3.00x 0.90x >= 0.85x write 1x1: met", rows["mutex 4x2"])
	assert.Equal(t, "mutex 1x1 300 200 300 1.50x - >= 1.5x curator: met", rows["mutex 1x1"])
	assert.Equal(t, "semaphore 4x2 300 200 - 1.50x 0.30x >= 2x curator: NOT MET", rows["semaphore 4x2"])
	assert.Equal(t, "mutex 4x8 300 - - - 0.30x -", rows["mutex 4x8"], "ours only: no ratio to Curator, no target")
}

// TestScale: the scale workload queues its waiters, measures hand-overs with the queue
// full, and leaves nothing behind.
func TestScale(t *testing.T) {
	srv := zktest.NewServer(t)
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"--connect", srv.ConnectString(), "--workload", "scale",
		"--clients", "3", "--waiters", "20", "--ops", "60"}, &stdout, &stderr)
	require.NoError(t, err, stderr.String())
	var line map[string]any
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &line), stdout.String())
	assert.Equal(t, "scale", line["workload"])
	assert.EqualValues(t, 20, line["waiters"])
	assert.EqualValues(t, 3, line["clients"])
	assert.GreaterOrEqual(t, line["ops"], 60.0)
	assert.EqualValues(t, 0, line["violations"])
	assert.Greater(t, line["ops_per_s"], 0.0)
	assert.Greater(t, line["listings_per_handover"], 0.0)
	assert.Greater(t, line["server_watches"], 0.0, "the waiters watch their predecessors")
	left, err := zktest.Children(context.Background(), srv.ConnectString(), "/zkbench")
	require.NoError(t, err)
	assert.Empty(t, left, "the run's base path is deleted")
}
