package reliability_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// histEpoch is the clock every recorder reads: time.Since uses the monotonic clock, and
// all clients of a scenario share it, so invocations and returns of different clients
// compare in real time.
var histEpoch = time.Now()

func histNow() int64 { return int64(time.Since(histEpoch)) }

// histCheckTimeout bounds porcupine's search; a history it cannot decide in time is
// reported (CheckResult Unknown), not counted as a violation.
const histCheckTimeout = 2 * time.Minute

// recorder collects one history: every operation's invocation and return, with the
// outcome. It is safe for concurrent use.
type recorder struct {
	mu      sync.Mutex
	ops     []porcupine.Operation
	unknown []int // indexes of operations whose outcome is unknown
}

// add records an operation that returned a definite outcome; err, when not nil, is kept
// as the operation's metadata (shown in the visualisation).
func (r *recorder) add(client int, in, out any, call, ret int64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret, Metadata: errText(err)})
}

// addUnknown records an operation whose outcome is unknown: it may have been applied at
// any time after call, or never. Its return is set to the end of the history.
func (r *recorder) addUnknown(client int, in, out any, call int64, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.unknown = append(r.unknown, len(r.ops))
	r.ops = append(r.ops, porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Metadata: errText(err)})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// history returns the operations, the unknown ones returning after every other event.
func (r *recorder) history() []porcupine.Operation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var end int64
	for _, op := range r.ops {
		end = max(end, op.Call, op.Return)
	}
	ops := append([]porcupine.Operation(nil), r.ops...)
	for _, i := range r.unknown {
		ops[i].Return = end + 1
	}
	return ops
}

func (r *recorder) counts() (ops, unknown int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ops), len(r.unknown)
}

// artifactDir is where visualisations go: $ZOOCURATOR_ARTIFACTS, or a directory under
// os.TempDir (t.TempDir is deleted with the test).
func artifactDir() (string, error) {
	dir := os.Getenv("ZOOCURATOR_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "zoocurator-artifacts")
	}
	return dir, os.MkdirAll(dir, 0o755)
}

// checkHistory checks ops against model and returns porcupine's verdict. Anything but
// Ok writes porcupine's HTML visualisation next to the test output and logs its path.
func checkHistory(t testing.TB, name string, model porcupine.Model, ops []porcupine.Operation) porcupine.CheckResult {
	t.Helper()
	start := time.Now()
	model.DescribeOperationMetadata = func(m any) string { return m.(string) }
	res, info := porcupine.CheckOperationsVerbose(model, ops, histCheckTimeout)
	t.Logf("history %s: %d operations, %s (checked in %v)", name, len(ops), res, time.Since(start).Round(time.Millisecond))
	if res == porcupine.Ok {
		return res
	}
	dir, err := artifactDir()
	if err != nil {
		t.Errorf("history %s: no directory for the visualisation: %v", name, err)
		return res
	}
	base := strings.NewReplacer("/", "_", " ", "_", "=", "-").Replace(t.Name() + "-" + name)
	path := filepath.Join(dir, fmt.Sprintf("%s-%s.html", base, time.Now().UTC().Format("20060102T150405.000")))
	if err := porcupine.VisualizePath(model, info, path); err != nil {
		t.Errorf("history %s: writing the visualisation: %v", name, err)
		return res
	}
	t.Logf("history %s is %s: porcupine's visualisation is %s", name, res, path)
	if err := os.WriteFile(strings.TrimSuffix(path, ".html")+".txt", []byte(describeHistory(model, ops)), 0o644); err != nil {
		t.Errorf("history %s: writing it as text: %v", name, err)
	}
	firstVisualisation.CompareAndSwap(nil, &path)
	return res
}

// firstVisualisation is the path of the first visualisation written (the soak reports it).
var firstVisualisation atomic.Pointer[string]

// describeHistory lists ops as text, by invocation time: client, call and return in
// milliseconds, the operation, and its error if any.
func describeHistory(model porcupine.Model, ops []porcupine.Operation) string {
	sorted := append([]porcupine.Operation(nil), ops...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Call < sorted[j].Call })
	var b strings.Builder
	for _, op := range sorted {
		fmt.Fprintf(&b, "c%d [%.3f, %.3f] %s", op.ClientId, float64(op.Call)/1e6, float64(op.Return)/1e6,
			model.DescribeOperation(op.Input, op.Output))
		if m, _ := op.Metadata.(string); m != "" {
			fmt.Fprintf(&b, " (%s)", m)
		}
		b.WriteString("\n")
	}
	return b.String()
}
