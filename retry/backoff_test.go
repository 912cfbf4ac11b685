package retry

import (
	"errors"
	"testing"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// countingBackOff returns its sleeps in turn, then backoff.Stop, and counts
// its resets.
type countingBackOff struct {
	sleeps []time.Duration
	next   int
	resets int
}

func (b *countingBackOff) Reset() { b.next = 0; b.resets++ }

func (b *countingBackOff) NextBackOff() time.Duration {
	if b.next >= len(b.sleeps) {
		return backoff.Stop
	}
	d := b.sleeps[b.next]
	b.next++
	return d
}

func TestFromBackOff(t *testing.T) {
	type call struct {
		retryCount int
		wantSleep  time.Duration
		wantOK     bool
	}
	tests := []struct {
		name  string
		b     backoff.BackOff
		calls []call
	}{
		{
			name:  "constant",
			b:     backoff.NewConstantBackOff(5 * time.Millisecond),
			calls: []call{{0, 5 * time.Millisecond, true}, {1, 5 * time.Millisecond, true}, {50, 5 * time.Millisecond, true}},
		},
		{
			name:  "stop",
			b:     &backoff.StopBackOff{},
			calls: []call{{0, 0, false}, {1, 0, false}},
		},
		{
			name:  "zero",
			b:     &backoff.ZeroBackOff{},
			calls: []call{{0, 0, true}},
		},
		{
			name: "max retries, reset at retry 0",
			b:    backoff.WithMaxRetries(backoff.NewConstantBackOff(time.Millisecond), 2),
			calls: []call{
				{0, time.Millisecond, true},
				{1, time.Millisecond, true},
				{2, 0, false},
				{0, time.Millisecond, true}, // a new loop: Reset starts over
				{1, time.Millisecond, true},
				{2, 0, false},
			},
		},
		{
			name:  "nil",
			b:     nil,
			calls: []call{{0, 0, false}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := FromBackOff(tt.b)
			for i, c := range tt.calls {
				sleep, ok := p.AllowRetry(c.retryCount, 0)
				assert.Equal(t, c.wantOK, ok, "call %d", i)
				assert.Equal(t, c.wantSleep, sleep, "call %d", i)
			}
		})
	}
}

func TestFromBackOffResetsOnlyAtFirstRetry(t *testing.T) {
	b := &countingBackOff{sleeps: []time.Duration{1, 2, 3}}
	p := FromBackOff(b)
	var got []time.Duration
	for k := range 4 {
		d, ok := p.AllowRetry(k, 0)
		if ok {
			got = append(got, d)
		}
	}
	assert.Equal(t, []time.Duration{1, 2, 3}, got)
	assert.Equal(t, 1, b.resets)
}

func TestToBackOff(t *testing.T) {
	t.Run("NTimes", func(t *testing.T) {
		b := ToBackOff(must(NewNTimes(2, 7*time.Millisecond)))
		b.Reset()
		assert.Equal(t, 7*time.Millisecond, b.NextBackOff())
		assert.Equal(t, 7*time.Millisecond, b.NextBackOff())
		assert.Equal(t, backoff.Stop, b.NextBackOff())
		assert.Equal(t, backoff.Stop, b.NextBackOff())
		b.Reset()
		assert.Equal(t, 7*time.Millisecond, b.NextBackOff())
	})
	t.Run("without Reset", func(t *testing.T) {
		b := ToBackOff(must(NewOneTime(time.Second)))
		assert.Equal(t, time.Second, b.NextBackOff())
		assert.Equal(t, backoff.Stop, b.NextBackOff())
	})
	t.Run("elapsed from the clock", func(t *testing.T) {
		clock := newFakeClock()
		b := ToBackOff(must(NewUntilElapsed(time.Second, 300*time.Millisecond)), WithBackOffClock(clock))
		b.Reset()
		assert.Equal(t, 300*time.Millisecond, b.NextBackOff())
		clock.Advance(999 * time.Millisecond)
		assert.Equal(t, 300*time.Millisecond, b.NextBackOff())
		clock.Advance(time.Millisecond)
		assert.Equal(t, backoff.Stop, b.NextBackOff())
		b.Reset() // the clock starts over
		assert.Equal(t, 300*time.Millisecond, b.NextBackOff())
	})
	t.Run("retry count and elapsed passed to the policy", func(t *testing.T) {
		clock := newFakeClock()
		var got []string
		p := policyFunc(func(k int, elapsed time.Duration) (time.Duration, bool) {
			got = append(got, time.Duration(k).String()+"@"+elapsed.String())
			return time.Millisecond, k < 2
		})
		b := ToBackOff(p, WithBackOffClock(clock), WithBackOffClock(nil))
		b.Reset()
		for range 3 {
			b.NextBackOff()
			clock.Advance(time.Second)
		}
		assert.Equal(t, []string{"0s@0s", "1ns@1s", "2ns@2s"}, got)
	})
	t.Run("negative sleep is not Stop", func(t *testing.T) {
		b := ToBackOff(policyFunc(func(int, time.Duration) (time.Duration, bool) { return backoff.Stop, true }))
		assert.Equal(t, time.Duration(0), b.NextBackOff())
	})
	t.Run("nil policy", func(t *testing.T) {
		b := ToBackOff(nil)
		b.Reset()
		assert.Equal(t, backoff.Stop, b.NextBackOff())
	})
}

func TestBackOffRoundTrips(t *testing.T) {
	p := must(NewNTimes(3, time.Millisecond))
	assert.Same(t, p, FromBackOff(ToBackOff(p)))

	b := backoff.NewConstantBackOff(time.Millisecond)
	assert.Same(t, b, ToBackOff(FromBackOff(b)))

	// A BackOff that went through a Policy behaves as before.
	wrapped := FromBackOff(ToBackOff(FromBackOff(backoff.WithMaxRetries(backoff.NewConstantBackOff(time.Millisecond), 1))))
	d, ok := wrapped.AllowRetry(0, 0)
	assert.True(t, ok)
	assert.Equal(t, time.Millisecond, d)
	_, ok = wrapped.AllowRetry(1, 0)
	assert.False(t, ok)
}

func TestToBackOffWithBackoffRetry(t *testing.T) {
	boom := errors.New("boom")
	timer := newFakeTimer(nil)
	attempts := 0
	err := backoff.RetryNotifyWithTimer(func() error {
		attempts++
		return boom
	}, ToBackOff(must(NewNTimes(3, 25*time.Millisecond))), nil, timer)
	require.ErrorIs(t, err, boom)
	assert.Equal(t, 4, attempts)
	assert.Equal(t, []time.Duration{25 * time.Millisecond, 25 * time.Millisecond, 25 * time.Millisecond}, timer.Sleeps())

	// The same BackOff serves a second loop: backoff.Retry resets it.
	attempts = 0
	b := ToBackOff(must(NewOneTime(0)))
	for range 2 {
		attempts = 0
		err = backoff.RetryNotifyWithTimer(func() error { attempts++; return boom }, b, nil, newFakeTimer(nil))
		require.ErrorIs(t, err, boom)
		assert.Equal(t, 2, attempts)
	}
}

// policyFunc makes a function a Policy.
type policyFunc func(int, time.Duration) (time.Duration, bool)

func (f policyFunc) AllowRetry(k int, elapsed time.Duration) (time.Duration, bool) {
	return f(k, elapsed)
}
