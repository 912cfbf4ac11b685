package reliability_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
	zatomic "github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/retry"
)

// histProfile sizes a history scenario: every worker pauses pace between operations
// (which keeps the fast profile's histories at a few hundred operations) and, once the
// fault healed, does after more operations with a definite outcome before the scenario
// ends.
type histProfile struct {
	pace  time.Duration
	after int
}

var (
	histFast = histProfile{pace: 40 * time.Millisecond, after: 5}
	histSoak = histProfile{pace: 10 * time.Millisecond, after: 100}
)

// histOpTimeout bounds one register or counter call: shorter than the long stall, so
// some calls end with their context while their request is in flight.
const histOpTimeout = 3 * time.Second

// histOutcome is what one scenario counted, for the soak report.
type histOutcome struct {
	ops, unknown, violations, undecided int
}

// noRetryPolicy makes a client try each request once. The register workload's clients
// use it: the framework retries a write after a connection loss as Curator does, and a
// retried create, versioned set or delete then answers NodeExists, BadVersion or NoNode
// although its first attempt was applied, and a retried set(-1) may apply twice — a
// history a caller cannot read (see TestHistoryRegisterNegativeControl). Without
// retries, each call is one request: its answer is definite, or its outcome unknown.
func noRetryPolicy(t testing.TB) retry.Policy {
	p, err := retry.NewNTimes(0, 0)
	require.NoError(t, err)
	return p
}

// regResult maps a framework error to the register's result and, for a failed
// transaction, the index of the op that failed. Any error but ZooKeeper's definite
// answers leaves the outcome unknown.
func regResult(err error) (result, int) {
	index := 0
	var te *framework.TxnError
	if errors.As(err, &te) {
		index = te.Index
	}
	switch {
	case err == nil:
		return resOK, 0
	case errors.Is(err, framework.ErrNoNode):
		return resNoNode, index
	case errors.Is(err, framework.ErrNodeExists):
		return resNodeExists, index
	case errors.Is(err, framework.ErrBadVersion):
		return resBadVersion, index
	}
	return resUnknown, 0
}

// regCall runs in on the register's nodes through c.
func regCall(ctx context.Context, c *framework.Client, paths [regKeys]string, in regInput) (regOutput, error) {
	p, other := paths[in.key], paths[(in.key+1)%regKeys]
	var out regOutput
	var err error
	switch in.kind {
	case regCreate:
		_, err = c.Create(ctx, p, []byte(in.data))
	case regGet:
		// ZooKeeper serves a read from the server the client is connected to, which may
		// lag behind a write another client already saw acknowledged: reads are
		// sequentially consistent, not linearizable. A sync first makes that server catch
		// up with the leader, which is how a ZooKeeper client reads linearizably.
		var data []byte
		var st *framework.Stat
		if err = c.Sync(ctx, framework.ParentPath(p)); err == nil {
			if data, st, err = c.GetData(ctx, p); err == nil {
				out.data, out.version = string(data), st.Version
			}
		}
	case regSet, regSetV:
		v := int32(-1)
		if in.kind == regSetV {
			v = in.version
		}
		var st *framework.Stat
		if st, err = c.SetData(ctx, p, []byte(in.data), v); err == nil {
			out.version = st.Version
		}
	case regDelete:
		err = c.Delete(ctx, p)
	case regDeleteV:
		err = c.Delete(ctx, p, framework.WithVersion(in.version))
	case regTxnCheck:
		_, err = c.Transaction(ctx, framework.CheckOp(p, in.version), framework.SetDataOp(other, []byte(in.data), -1))
	case regTxnRecreate:
		_, err = c.Transaction(ctx, framework.DeleteOp(p, -1), framework.CreateOp(p, []byte(in.data), framework.Persistent, nil))
	}
	out.res, out.index = regResult(err)
	return out, err
}

// registerWorker returns worker id's next operation on the register: a random call,
// versioned ones with the last version this worker saw. It reports whether the call had
// a definite outcome.
func registerWorker(c *framework.Client, paths [regKeys]string, id int, rec *recorder, rng *rand.Rand) func(context.Context) bool {
	var seen [regKeys]int32
	seq := 0
	return func(ctx context.Context) bool {
		in := regInput{kind: regKind(rng.IntN(len(regKindNames))), key: rng.IntN(regKeys)}
		if in.kind != regGet && in.kind != regDelete && in.kind != regDeleteV {
			seq++
			in.data = fmt.Sprintf("w%d.%d", id, seq)
		}
		in.version = seen[in.key]
		octx, cancel := context.WithTimeout(ctx, histOpTimeout)
		call := histNow()
		out, err := regCall(octx, c, paths, in)
		ret := histNow()
		cancel()
		switch {
		case out.res == resUnknown && in.kind == regGet:
			return false // a failed read tells nothing
		case out.res == resUnknown:
			// Also when the scenario's end cancelled it: the request may be applied.
			rec.addUnknown(id, in, regOutput{res: resUnknown}, call, err)
			return false
		}
		if out.res == resOK && (in.kind == regGet || in.kind == regSet || in.kind == regSetV) {
			seen[in.key] = out.version
		}
		if out.res == resOK && (in.kind == regCreate || in.kind == regTxnRecreate) {
			seen[in.key] = 0
		}
		rec.add(id, in, out, call, ret, nil)
		return true
	}
}

// counterWorker returns worker id's next operation on the counter: an increment, a
// compare-and-set from the last value this worker saw to the next, or a get (after a
// sync, as regCall's reads).
func counterWorker(c *framework.Client, ctr *zatomic.Long, id int, rec *recorder, rng *rand.Rand) func(context.Context) bool {
	var seen int64
	return func(ctx context.Context) bool {
		var in ctrInput
		switch r := rng.IntN(4); {
		case r < 2:
			in.kind = ctrIncrement
		case r == 2:
			in = ctrInput{kind: ctrCompareAndSet, expected: seen, n: seen + 1}
		default:
			in.kind = ctrGet
		}
		octx, cancel := context.WithTimeout(ctx, histOpTimeout)
		call := histNow()
		var res zatomic.Result[int64]
		var err error
		switch in.kind {
		case ctrIncrement:
			res, err = ctr.Increment(octx)
		case ctrCompareAndSet:
			res, err = ctr.CompareAndSet(octx, in.expected, in.n)
		case ctrGet:
			if err = c.Sync(octx, ctr.Path()); err == nil {
				res, err = ctr.Get(octx)
			}
		}
		ret := histNow()
		cancel()
		switch {
		case err != nil && in.kind == ctrGet:
			return false
		case errors.Is(err, zatomic.ErrUnknownOutcome):
			rec.addUnknown(id, in, ctrOutput{unknown: true}, call, err)
			return false
		case err != nil:
			// The recipe says nothing was written: a definite "not done".
			rec.add(id, in, ctrOutput{failed: true}, call, ret, err)
			return false
		}
		if res.Succeeded || in.kind == ctrGet {
			seen = res.Post
		}
		rec.add(id, in, ctrOutput{succeeded: res.Succeeded, pre: res.Pre, post: res.Post}, call, ret, nil)
		return true
	}
}

// fencedStore is the resource a lock protects: a value that holders read and then write
// back incremented, presenting their lease's fencing token. Fenced, it refuses a token
// older than the highest it accepted. It records its own history: each call's
// invocation and return are taken under its mutex.
type fencedStore struct {
	mu             sync.Mutex
	fenced         bool
	value, highest int64
	rec            *recorder
}

func (s *fencedStore) read(client int) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	call := histNow()
	v := s.value
	s.rec.add(client, fencedInput{}, fencedOutput{value: v}, call, histNow(), nil)
	return v
}

func (s *fencedStore) write(client int, token, read int64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	call := histNow()
	ok := !s.fenced || token >= s.highest
	if ok {
		s.value, s.highest = read+1, max(s.highest, token)
	}
	s.rec.add(client, fencedInput{write: true, token: token, read: read}, fencedOutput{accepted: ok}, call, histNow(), nil)
	return ok
}

// lockWorker returns worker id's next critical section: take the mutex, read the store,
// and unless the lease's Done closed meanwhile, write read+1 with the lease's token.
func lockWorker(m *mutex.Mutex, id int, st *fencedStore) func(context.Context) bool {
	return func(ctx context.Context) bool {
		actx, cancel := context.WithTimeout(ctx, 10*time.Second)
		l, err := m.Acquire(actx)
		cancel()
		if err != nil {
			return false
		}
		defer func() {
			rctx, rcancel := context.WithTimeout(context.Background(), 10*time.Second)
			_ = l.Release(rctx) // a lost lease says so; its node goes anyway
			rcancel()
		}()
		tctx, tcancel := context.WithTimeout(ctx, 2*time.Second)
		tok, err := l.Token(tctx)
		tcancel()
		if err != nil {
			return false
		}
		v := st.read(id)
		select {
		case <-l.Done():
			return false // possibly lost: do not write
		default:
		}
		st.write(id, tok, v)
		return true
	}
}

// runHistory runs the three workloads together — a register per znode, a recipes/atomic
// counter, a mutex-protected fenced store — on clients behind the fault proxy and
// direct ones, injects f once every worker is busy, heals it, lets every worker finish
// p.after more operations, and checks each history with porcupine, plus cleanliness.
func runHistory(t *testing.T, f fault, p histProfile) histOutcome {
	e := newEnv(t, 2)
	seed := uint64(pathSeq.Add(1))
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	setup, scancel := context.WithTimeout(context.Background(), time.Minute)
	defer scancel()

	// The register's nodes live under a persistent parent (a container could be reaped
	// between a delete and the next create); its parent, the base, is a container.
	regParent := e.base + "/reg"
	_, err := e.others[0].Create(setup, regParent, nil, framework.WithContainerParents())
	require.NoError(t, err)
	var regPaths [regKeys]string
	for k := range regPaths {
		regPaths[k] = fmt.Sprintf("%s/k%d", regParent, k)
	}
	noRetry := framework.WithRetryPolicy(noRetryPolicy(t))
	regClients := []*framework.Client{
		connect(t, ens.ConnectString(), victimSession, framework.WithDialer(e.proxy.Dialer()), noRetry),
		connect(t, ens.ConnectString(), otherSession, noRetry),
	}
	ctrPath, lockPath := e.base+"/counter", e.base+"/lock"
	init, err := zatomic.NewLong(e.others[0], ctrPath)
	require.NoError(t, err)
	require.NoError(t, init.ForceSet(setup, 0))

	regRec, ctrRec, lockRec := &recorder{}, &recorder{}, &recorder{}
	st := &fencedStore{fenced: true, rec: lockRec}
	var ops []func(context.Context) bool
	for i, c := range regClients {
		ops = append(ops, registerWorker(c, regPaths, i, regRec, rand.New(rand.NewPCG(seed, uint64(i)))))
	}
	for i, c := range e.clients() {
		ctr, err := zatomic.NewLong(c, ctrPath)
		require.NoError(t, err)
		ops = append(ops, counterWorker(c, ctr, i, ctrRec, rand.New(rand.NewPCG(seed, uint64(10+i)))))
		m, err := mutex.New(c, lockPath)
		require.NoError(t, err)
		ops = append(ops, lockWorker(m, i, st))
	}

	var healed atomic.Bool
	warm := make(chan struct{}, len(ops))
	settled := make(chan struct{}, len(ops))
	for _, op := range ops {
		wg.Add(1)
		go func() {
			defer wg.Done()
			before, after := 0, 0
			for ctx.Err() == nil {
				if op(ctx) {
					if !healed.Load() {
						if before++; before == 3 {
							warm <- struct{}{}
						}
					} else if after++; after == p.after {
						settled <- struct{}{}
					}
				}
				select {
				case <-ctx.Done():
				case <-time.After(p.pace):
				}
			}
		}()
	}
	wait := func(ch <-chan struct{}, d time.Duration, what string) bool {
		deadline := time.NewTimer(d)
		defer deadline.Stop()
		for range ops {
			select {
			case <-ch:
			case <-deadline.C:
				t.Errorf("liveness: not every worker %s within %v", what, d)
				return false
			}
		}
		return true
	}
	require.True(t, wait(warm, time.Minute, "got going"))
	heal := f.inject(t, e)
	time.Sleep(f.hold)
	heal()
	healed.Store(true)
	wait(settled, livenessBound, fmt.Sprintf("did %d operations after the fault healed", p.after))
	cancel()
	wg.Wait()

	var o histOutcome
	for _, h := range []struct {
		name  string
		model porcupine.Model
		rec   *recorder
	}{{"register", registerModel, regRec}, {"counter", counterModel, ctrRec}, {"fenced-register", fencedModel, lockRec}} {
		n, unknown := h.rec.counts()
		o.ops += n
		o.unknown += unknown
		res := checkHistory(t, h.name, h.model, h.rec.history())
		count(t, "linearizability", checkCount{ops: n, unknown: unknown, violations: btoi(res == porcupine.Illegal)})
		switch res {
		case porcupine.Illegal:
			o.violations++
			t.Errorf("linearizability: the %s history under %s is not linearizable", h.name, f.name)
		case porcupine.Unknown:
			o.undecided++
		}
		t.Logf("%s under %s: %d operations, %d with an unknown outcome", h.name, f.name, n, unknown)
	}

	// A write whose caller gave up may still land after the workers stopped (seen under
	// pause-leader: a create applied after Delete listed the children). The register's
	// clients are closed first: Close waits for their requests in flight, and the server
	// applies a session's requests in order, before its close. Delete with children lists
	// the children once, as Curator's does, from a server that may lag behind writes
	// other clients saw acknowledged: sync first, and delete again if a child still
	// appeared in between.
	for _, c := range regClients {
		_ = c.Close()
	}
	cleanup, ccancel := context.WithTimeout(context.Background(), time.Minute)
	defer ccancel()
	require.NoError(t, e.others[0].Sync(cleanup, regParent))
	for {
		err := e.others[0].Delete(cleanup, regParent, framework.WithChildren())
		if !errors.Is(err, framework.ErrNotEmpty) {
			require.NoError(t, err)
			break
		}
		t.Logf("cleanup: a child appeared under %s while it was deleted; deleting again", regParent)
	}
	require.NoError(t, e.others[0].Delete(cleanup, ctrPath))
	for _, p := range e.problems(30*time.Second, lockPath) {
		t.Error("cleanliness: " + p)
	}
	return o
}

// The three history workloads are recorded under every fault in TestUnderFaults and
// checked for linearizability.
func init() {
	registerScenario("history", false, func(t *testing.T, f fault) {
		o := runHistory(t, f, histFast)
		assert.Zero(t, o.violations)
	})
}
