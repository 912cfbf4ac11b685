package retry

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIsRetryable(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("create /a: %w", err) }
	tests := []struct {
		name               string
		err                error
		retrySessionExpiry bool
		want               bool
	}{
		{name: "nil", err: nil, want: false},
		{name: "connection closed", err: zk.ErrConnectionClosed, want: true},
		{name: "no server", err: zk.ErrNoServer, want: true},
		{name: "session moved", err: zk.ErrSessionMoved, want: true},
		{name: "server closing", err: zk.ErrClosing, want: true},
		{name: "operation timeout", err: ErrOperationTimeout, want: true},
		{name: "session expired, retried", err: zk.ErrSessionExpired, retrySessionExpiry: true, want: true},
		{name: "session expired, not retried", err: zk.ErrSessionExpired, retrySessionExpiry: false, want: false},
		{name: "wrapped connection closed", err: wrap(zk.ErrConnectionClosed), want: true},
		{name: "twice wrapped no server", err: wrap(wrap(zk.ErrNoServer)), want: true},
		{name: "joined timeout", err: errors.Join(errors.New("x"), ErrOperationTimeout), want: true},
		{name: "wrapped session expired, retried", err: wrap(zk.ErrSessionExpired), retrySessionExpiry: true, want: true},
		{name: "wrapped session expired, not retried", err: wrap(zk.ErrSessionExpired), want: false},
		{name: "no node", err: zk.ErrNoNode, want: false},
		{name: "node exists", err: wrap(zk.ErrNodeExists), want: false},
		{name: "bad version", err: zk.ErrBadVersion, retrySessionExpiry: true, want: false},
		{name: "no auth", err: zk.ErrNoAuth, want: false},
		{name: "other", err: errors.New("boom"), want: false},
		{name: "context canceled", err: context.Canceled, retrySessionExpiry: true, want: false},
		{name: "deadline exceeded", err: wrap(context.DeadlineExceeded), retrySessionExpiry: true, want: false},
		{name: "cancelled nested Do", err: cancelled(context.Canceled, zk.ErrConnectionClosed), retrySessionExpiry: true, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, IsRetryable(tt.err, tt.retrySessionExpiry))
		})
	}
}

// failing returns an operation that fails with errs in turn and then
// succeeds, and counts its calls in *attempts.
func failing(attempts *int, errs ...error) func(context.Context) error {
	return func(context.Context) error {
		*attempts++
		if *attempts <= len(errs) {
			return errs[*attempts-1]
		}
		return nil
	}
}

func TestDoSucceedsAfterRetryableFailures(t *testing.T) {
	tests := []struct {
		name string
		p    Policy
		errs []error
	}{
		{name: "first try", p: must(NewNTimes(3, time.Second))},
		{name: "one failure", p: must(NewNTimes(3, time.Second)), errs: []error{zk.ErrConnectionClosed}},
		{
			name: "every retryable kind",
			p:    must(NewNTimes(6, time.Second)),
			errs: []error{
				zk.ErrConnectionClosed, zk.ErrNoServer, zk.ErrSessionMoved,
				zk.ErrClosing, fmt.Errorf("get: %w", ErrOperationTimeout), zk.ErrSessionExpired,
			},
		},
		{name: "as many failures as retries", p: must(NewNTimes(2, time.Second)), errs: []error{zk.ErrNoServer, zk.ErrNoServer}},
		{name: "forever", p: must(NewForever(time.Second)), errs: []error{zk.ErrNoServer, zk.ErrNoServer, zk.ErrNoServer}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			timer := newFakeTimer(nil)
			attempts := 0
			err := Do(t.Context(), tt.p, failing(&attempts, tt.errs...), WithTimer(timer))
			require.NoError(t, err)
			assert.Equal(t, len(tt.errs)+1, attempts)
			want := make([]time.Duration, len(tt.errs))
			for i := range want {
				want[i] = time.Second
			}
			assert.Equal(t, want, append(make([]time.Duration, 0), timer.Sleeps()...))
			assert.True(t, timer.Stopped())
		})
	}
}

func TestDoExponentialSleeps(t *testing.T) {
	p := must(NewBoundedExponentialBackoff(100*time.Millisecond, time.Second, 5, WithRand(maxRand)))
	timer := newFakeTimer(nil)
	attempts := 0
	errs := []error{zk.ErrNoServer, zk.ErrNoServer, zk.ErrNoServer, zk.ErrNoServer, zk.ErrNoServer, zk.ErrNoServer}
	err := Do(t.Context(), p, failing(&attempts, errs...), WithTimer(timer))
	require.ErrorIs(t, err, ErrRetriesExhausted)
	require.ErrorIs(t, err, zk.ErrNoServer)
	assert.Equal(t, 6, attempts)
	assert.Equal(t, []time.Duration{
		100 * time.Millisecond, 300 * time.Millisecond, 700 * time.Millisecond, time.Second, time.Second,
	}, timer.Sleeps())
}

func TestDoReturnsNonRetryableAtOnce(t *testing.T) {
	wrapped := fmt.Errorf("delete /a: %w", zk.ErrNotEmpty)
	// A *backoff.PermanentError from op means nothing special to Do.
	permanent := backoff.Permanent(zk.ErrBadVersion)
	tests := []struct {
		name         string
		p            Policy
		errs         []error
		wantAttempts int
	}{
		{name: "no node", p: must(NewNTimes(3, 0)), errs: []error{zk.ErrNoNode}, wantAttempts: 1},
		{name: "wrapped", p: must(NewNTimes(3, 0)), errs: []error{wrapped}, wantAttempts: 1},
		{name: "after retryable", p: must(NewNTimes(3, 0)), errs: []error{zk.ErrConnectionClosed, zk.ErrNodeExists}, wantAttempts: 2},
		{name: "op's own context error", p: must(NewNTimes(3, 0)), errs: []error{context.DeadlineExceeded}, wantAttempts: 1},
		{name: "backoff permanent", p: must(NewNTimes(3, 0)), errs: []error{permanent}, wantAttempts: 1},
		{name: "session expired under SessionFailed", p: SessionFailed(must(NewNTimes(3, 0))), errs: []error{zk.ErrSessionExpired}, wantAttempts: 1},
		{
			name:         "wrapped session expired under SessionFailed after retryable",
			p:            SessionFailed(must(NewNTimes(3, 0))),
			errs:         []error{zk.ErrNoServer, fmt.Errorf("set: %w", zk.ErrSessionExpired)},
			wantAttempts: 2,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attempts := 0
			timer := newFakeTimer(nil)
			err := Do(t.Context(), tt.p, failing(&attempts, tt.errs...), WithTimer(timer))
			assert.Equal(t, tt.errs[len(tt.errs)-1], err, "the error comes back as it is")
			assert.Equal(t, tt.wantAttempts, attempts)
			assert.Len(t, timer.Sleeps(), tt.wantAttempts-1)
		})
	}
}

func TestDoSessionExpiryRetriedWithoutSessionFailed(t *testing.T) {
	attempts := 0
	err := Do(t.Context(), must(NewNTimes(3, 0)), failing(&attempts, zk.ErrSessionExpired, zk.ErrSessionExpired), WithTimer(newFakeTimer(nil)))
	require.NoError(t, err)
	assert.Equal(t, 3, attempts)
}

func TestDoGivesUp(t *testing.T) {
	last := fmt.Errorf("get /a: %w", zk.ErrConnectionClosed)
	tests := []struct {
		name         string
		p            Policy
		wantAttempts int
		wantMsg      string
	}{
		{name: "no retries", p: must(NewNTimes(0, time.Second)), wantAttempts: 1, wantMsg: "retry: gave up after 0 retries: get /a: zk: connection closed"},
		{name: "one time", p: must(NewOneTime(time.Second)), wantAttempts: 2, wantMsg: "retry: gave up after 1 retries: get /a: zk: connection closed"},
		{name: "exponential", p: must(NewExponentialBackoff(time.Millisecond, 4)), wantAttempts: 5, wantMsg: "retry: gave up after 4 retries: get /a: zk: connection closed"},
		{name: "from backoff", p: FromBackOff(backoff.WithMaxRetries(&backoff.ZeroBackOff{}, 2)), wantAttempts: 3, wantMsg: "retry: gave up after 2 retries: get /a: zk: connection closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			attempts := 0
			err := Do(t.Context(), tt.p, func(context.Context) error {
				attempts++
				return last
			}, WithTimer(newFakeTimer(nil)))
			require.ErrorIs(t, err, ErrRetriesExhausted)
			require.ErrorIs(t, err, last)
			require.ErrorIs(t, err, zk.ErrConnectionClosed)
			assert.EqualError(t, err, tt.wantMsg)
			assert.Equal(t, tt.wantAttempts, attempts)
		})
	}
}

func TestDoUntilElapsedUsesClock(t *testing.T) {
	clock := newFakeClock()
	timer := newFakeTimer(clock) // each sleep advances the clock
	attempts := 0
	err := Do(t.Context(), must(NewUntilElapsed(35*time.Millisecond, 10*time.Millisecond)), func(context.Context) error {
		attempts++
		clock.Advance(time.Millisecond) // each attempt takes 1 ms
		return zk.ErrNoServer
	}, WithTimer(timer), WithClock(clock))
	require.ErrorIs(t, err, ErrRetriesExhausted)
	require.ErrorIs(t, err, zk.ErrNoServer)
	// Elapsed when asked: 1, 12, 23, 34 ms (retry), 45 ms (stop).
	assert.Equal(t, 5, attempts)
	assert.Len(t, timer.Sleeps(), 4)
}

func TestDoContextDoneBeforeFirstAttempt(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	attempts := 0
	err := Do(ctx, must(NewNTimes(3, 0)), failing(&attempts))
	require.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, attempts)
}

func TestDoCancelledDuringSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	timer := newNeverTimer()
	last := fmt.Errorf("get /a: %w", zk.ErrConnectionClosed)
	attempts := 0
	done := make(chan error, 1)
	go func() {
		done <- Do(ctx, must(NewForever(time.Hour)), func(context.Context) error {
			attempts++
			return last
		}, WithTimer(timer))
	}()

	select {
	case d := <-timer.started:
		assert.Equal(t, time.Hour, d)
	case <-time.After(2 * time.Second):
		t.Fatal("Do never started to sleep")
	}
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, last)
		require.ErrorIs(t, err, zk.ErrConnectionClosed)
		assert.NotErrorIs(t, err, ErrRetriesExhausted)
		assert.Equal(t, 1, attempts)
	case <-time.After(2 * time.Second):
		t.Fatal("Do did not return after cancellation")
	}
}

func TestDoDeadlineDuringSleep(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	// A real timer, with a sleep far longer than the deadline.
	err := Do(ctx, must(NewForever(time.Hour)), func(context.Context) error { return zk.ErrNoServer })
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorIs(t, err, zk.ErrNoServer)
	assert.Less(t, time.Since(start), 2*time.Second)
}

func TestDoCancelledDuringAttempt(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	attempts := 0
	timer := newFakeTimer(nil)
	err := Do(ctx, must(NewForever(time.Second)), func(context.Context) error {
		attempts++
		cancel()
		return zk.ErrConnectionClosed
	}, WithTimer(timer))
	require.ErrorIs(t, err, context.Canceled)
	require.ErrorIs(t, err, zk.ErrConnectionClosed)
	assert.Equal(t, 1, attempts)
	assert.Empty(t, timer.Sleeps())
}

func TestDoNoAttemptAfterCancelledSleep(t *testing.T) {
	// The timer fires and ctx is done at the same time: whichever Do sees
	// first, op must not run again.
	for range 50 {
		ctx, cancel := context.WithCancel(t.Context())
		timer := newFakeTimer(nil)
		timer.onStart = cancel
		attempts := 0
		err := Do(ctx, must(NewForever(time.Second)), func(context.Context) error {
			attempts++
			return zk.ErrNoServer
		}, WithTimer(timer))
		cancel()
		require.ErrorIs(t, err, context.Canceled)
		require.ErrorIs(t, err, zk.ErrNoServer)
		require.Equal(t, 1, attempts)
	}
}

func TestDoNotify(t *testing.T) {
	type note struct {
		err   error
		sleep time.Duration
	}
	var notes []note
	first := fmt.Errorf("a: %w", zk.ErrNoServer)
	second := fmt.Errorf("b: %w", ErrOperationTimeout)
	attempts := 0
	err := Do(t.Context(), must(NewNTimes(5, 3*time.Millisecond)), failing(&attempts, first, second),
		WithTimer(newFakeTimer(nil)),
		WithNotify(func(err error, sleep time.Duration) { notes = append(notes, note{err, sleep}) }))
	require.NoError(t, err)
	assert.Equal(t, []note{{first, 3 * time.Millisecond}, {second, 3 * time.Millisecond}}, notes)

	// Not called for the failure that ends the loop.
	notes = nil
	attempts = 0
	err = Do(t.Context(), must(NewOneTime(0)), failing(&attempts, first, second, first),
		WithTimer(newFakeTimer(nil)),
		WithNotify(func(err error, sleep time.Duration) { notes = append(notes, note{err, sleep}) }))
	require.ErrorIs(t, err, second)
	assert.Equal(t, []note{{first, 0}}, notes)
}

func TestDoPassesContext(t *testing.T) {
	type key struct{}
	ctx := context.WithValue(t.Context(), key{}, "v")
	var got []any
	attempts := 0
	err := Do(ctx, must(NewNTimes(1, 0)), func(ctx context.Context) error {
		got = append(got, ctx.Value(key{}))
		attempts++
		if attempts == 1 {
			return zk.ErrNoServer
		}
		return nil
	}, WithTimer(newFakeTimer(nil)))
	require.NoError(t, err)
	assert.Equal(t, []any{"v", "v"}, got)
}

func TestDoFromBackOffPolicyIsReset(t *testing.T) {
	p := FromBackOff(backoff.WithMaxRetries(backoff.NewConstantBackOff(time.Millisecond), 1))
	for range 3 {
		attempts := 0
		err := Do(t.Context(), p, failing(&attempts, zk.ErrNoServer, zk.ErrNoServer), WithTimer(newFakeTimer(nil)))
		require.ErrorIs(t, err, ErrRetriesExhausted)
		assert.Equal(t, 2, attempts)
	}
}

func TestDoArguments(t *testing.T) {
	t.Run("nil op", func(t *testing.T) {
		assert.ErrorIs(t, Do(t.Context(), Default(), nil), ErrNilOperation)
	})
	t.Run("nil policy means Default", func(t *testing.T) {
		timer := newFakeTimer(nil)
		attempts := 0
		errs := make([]error, 10)
		for i := range errs {
			errs[i] = zk.ErrNoServer
		}
		require.NoError(t, Do(t.Context(), nil, failing(&attempts, errs...), WithTimer(timer), WithTimer(nil), WithClock(nil)))
		assert.Equal(t, 11, attempts)
		for _, d := range timer.Sleeps() {
			assert.GreaterOrEqual(t, d, defaultBaseSleep)
			assert.LessOrEqual(t, d, defaultMaxSleep)
		}

		attempts = 0
		errs = append(errs, zk.ErrNoServer)
		err := Do(t.Context(), nil, failing(&attempts, errs...), WithTimer(newFakeTimer(nil)))
		require.ErrorIs(t, err, ErrRetriesExhausted)
		assert.Equal(t, 11, attempts)
	})
}
