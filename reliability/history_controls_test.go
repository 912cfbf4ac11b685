package reliability_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
	zatomic "github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/recipes/mutex"
)

// The negative controls: each history checker must reject the history of a deliberately
// broken client, and accept the same scenario run by a correct one. Each scenario is made
// deterministic by a fault that does not depend on timing: a lost create reply, or a
// stall that lasts until the server expires a session.

// wantVerdict checks h against model and asserts porcupine's verdict; a rejection must
// come with its visualisation, which goes to a directory deleted with the test (a
// rejection is what a control expects: its files would only pile up).
func wantVerdict(t *testing.T, name string, model porcupine.Model, rec *recorder, want porcupine.CheckResult) {
	t.Helper()
	t.Setenv("ZOOCURATOR_ARTIFACTS", t.TempDir())
	before := visualisationCount()
	got := checkHistory(t, name, model, rec.history())
	assert.Equal(t, want, got, "porcupine's verdict on the %s history", name)
	if want == porcupine.Illegal {
		assert.Greater(t, visualisationCount(), before, "a rejected history writes its visualisation")
	}
}

// visualisationCount counts the HTML files in the artifact directory.
func visualisationCount() int {
	dir, err := artifactDir()
	if err != nil {
		return 0
	}
	entries, _ := os.ReadDir(dir)
	n := 0
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".html") {
			n++
		}
	}
	return n
}

// TestHistoryRegisterNegativeControl: the register checker rejects a client that retries
// a create blindly after its reply was lost and trusts the NodeExists the retry gets (the
// framework's retry policy does this, as Curator's does), and a client that serves reads
// from a cache. It accepts the same scenarios with a client that records a lost reply as
// an unknown outcome, and one that reads from ZooKeeper.
func TestHistoryRegisterNegativeControl(t *testing.T) {
	for _, broken := range []bool{true, false} {
		name := map[bool]string{true: "blind-retry", false: "unknown-outcome"}[broken]
		t.Run(name, func(t *testing.T) {
			leakcheck.Check(t)
			e := newEnv(t, 0)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			parent := e.base + "/reg"
			_, err := e.victim.Create(ctx, parent, nil, framework.WithContainerParents())
			require.NoError(t, err)
			paths := [regKeys]string{parent + "/k0", parent + "/k1"}
			c := e.victim // retries after a connection loss
			if !broken {
				c = connect(t, ens.ConnectString(), victimSession, framework.WithDialer(e.proxy.Dialer()),
					framework.WithRetryPolicy(noRetryPolicy(t)))
			}
			rec := &recorder{}
			in := regInput{kind: regCreate, key: 0, data: "w0.1"}
			e.proxy.DropNextCreateReply() // the server creates the node; the client never hears of it
			call := histNow()
			out, err := regCall(ctx, c, paths, in)
			ret := histNow()
			if broken {
				require.ErrorIs(t, err, framework.ErrNodeExists, "the retried create finds the node its first attempt made")
				rec.add(0, in, out, call, ret, err) // trusted: "someone else created it"
			} else {
				require.Equal(t, resUnknown, out.res, "the lost reply is a connection loss: %v", err)
				rec.addUnknown(0, in, out, call, err)
			}
			// The read goes through the client that retries: a retried read is harmless,
			// and the one that does not retry may not have its connection back yet.
			get := regInput{kind: regGet, key: 0}
			call = histNow()
			out, err = regCall(ctx, e.victim, paths, get)
			require.NoError(t, err)
			rec.add(1, get, out, call, histNow(), nil)
			want := map[bool]porcupine.CheckResult{true: porcupine.Illegal, false: porcupine.Ok}[broken]
			wantVerdict(t, "register", registerModel, rec, want)
			require.NoError(t, e.victim.Delete(ctx, parent, framework.WithChildren()))
			e.checkClean()
		})
	}
	for _, cached := range []bool{true, false} {
		name := map[bool]string{true: "stale-cache", false: "reads-zookeeper"}[cached]
		t.Run(name, func(t *testing.T) {
			leakcheck.Check(t)
			e := newEnv(t, 1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			parent := e.base + "/reg"
			_, err := e.victim.Create(ctx, parent, nil, framework.WithContainerParents())
			require.NoError(t, err)
			paths := [regKeys]string{parent + "/k0", parent + "/k1"}
			rec := &recorder{}
			do := func(client int, c *framework.Client, in regInput) regOutput {
				call := histNow()
				out, err := regCall(ctx, c, paths, in)
				require.NoError(t, err)
				rec.add(client, in, out, call, histNow(), nil)
				return out
			}
			do(0, e.victim, regInput{kind: regCreate, key: 0, data: "w0.1"})
			cache := do(0, e.victim, regInput{kind: regGet, key: 0})
			do(1, e.others[0], regInput{kind: regSet, key: 0, data: "w1.1"})
			get := regInput{kind: regGet, key: 0}
			if cached {
				call := histNow() // the broken reader answers from what it read before
				rec.add(0, get, cache, call, histNow(), nil)
			} else {
				do(0, e.victim, get)
			}
			want := map[bool]porcupine.CheckResult{true: porcupine.Illegal, false: porcupine.Ok}[cached]
			wantVerdict(t, "register", registerModel, rec, want)
			require.NoError(t, e.victim.Delete(ctx, parent, framework.WithChildren()))
			e.checkClean()
		})
	}
}

// TestHistoryCounterNegativeControl: the counter checker rejects a client that applies an
// increment again after the recipe reported its outcome unknown (the first was applied:
// its create's reply was lost), and accepts the client that records it as unknown.
func TestHistoryCounterNegativeControl(t *testing.T) {
	for _, broken := range []bool{true, false} {
		name := map[bool]string{true: "reapplies-unknown", false: "unknown-outcome"}[broken]
		t.Run(name, func(t *testing.T) {
			leakcheck.Check(t)
			e := newEnv(t, 0)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			// A persistent parent, so the counter's first write is the create of its own
			// node (the reply the proxy loses), not of a parent.
			parent := e.base + "/ctr"
			_, err := e.victim.Create(ctx, parent, nil, framework.WithContainerParents())
			require.NoError(t, err)
			ctr, err := zatomic.NewLong(e.victim, parent+"/value")
			require.NoError(t, err)
			rec := &recorder{}
			inc := ctrInput{kind: ctrIncrement}
			e.proxy.DropNextCreateReply()
			call := histNow()
			res, err := ctr.Increment(ctx)
			require.ErrorIs(t, err, zatomic.ErrUnknownOutcome, "the create's reply was lost: %+v", res)
			if broken {
				res, err = ctr.Increment(ctx) // "it probably did not happen": once more
				require.NoError(t, err)
				require.True(t, res.Succeeded)
				rec.add(0, inc, ctrOutput{succeeded: true, pre: res.Pre, post: res.Post}, call, histNow(), nil)
			} else {
				rec.addUnknown(0, inc, ctrOutput{unknown: true}, call, err)
			}
			call = histNow()
			res, err = ctr.Get(ctx)
			require.NoError(t, err)
			rec.add(0, ctrInput{kind: ctrGet}, ctrOutput{succeeded: true, post: res.Post}, call, histNow(), nil)
			want := map[bool]porcupine.CheckResult{true: porcupine.Illegal, false: porcupine.Ok}[broken]
			wantVerdict(t, "counter", counterModel, rec, want)
			require.NoError(t, e.victim.Delete(ctx, parent, framework.WithChildren()))
			e.checkClean()
		})
	}
}

// TestHistoryFencedRegisterNegativeControl: a holder is cut off until its session expires,
// another client takes the lock and writes, and the first one, ignoring its lease's Done,
// writes with its old token and its stale read. The checker rejects the history of a
// store that does not check tokens and accepts that of a fenced one.
func TestHistoryFencedRegisterNegativeControl(t *testing.T) {
	for _, fenced := range []bool{false, true} {
		name := map[bool]string{false: "unfenced-store", true: "fenced-store"}[fenced]
		t.Run(name, func(t *testing.T) {
			leakcheck.Check(t)
			e := newEnv(t, 1)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			path := e.base + "/lock"
			st := &fencedStore{fenced: fenced, rec: &recorder{}}
			mv, err := mutex.New(e.victim, path)
			require.NoError(t, err)
			mo, err := mutex.New(e.others[0], path)
			require.NoError(t, err)

			lv, err := mv.Acquire(ctx)
			require.NoError(t, err)
			tv, err := lv.Token(ctx)
			require.NoError(t, err)
			read := st.read(0)
			e.proxy.Stall() // the victim's session expires on the server; the other gets the lock

			lo, err := mo.Acquire(ctx)
			require.NoError(t, err)
			to, err := lo.Token(ctx)
			require.NoError(t, err)
			require.Greater(t, to, tv)
			require.True(t, st.write(1, to, st.read(1)))
			require.NoError(t, lo.Release(ctx))

			accepted := st.write(0, tv, read) // ignores Done: a paused process that wakes up
			assert.Equal(t, !fenced, accepted)
			e.proxy.Heal()
			if err := lv.Release(ctx); err != nil {
				require.True(t, errors.Is(err, mutex.ErrLeaseLost), "release of the lost lease: %v", err)
			}
			want := map[bool]porcupine.CheckResult{false: porcupine.Illegal, true: porcupine.Ok}[fenced]
			wantVerdict(t, "fenced-register", fencedModel, st.rec, want)
			e.checkClean(path)
		})
	}
}
