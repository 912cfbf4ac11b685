package retry

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestNewExponentialBackoffValidation(t *testing.T) {
	tests := []struct {
		name       string
		base       time.Duration
		maxRetries int
		opts       []Option
		wantErr    bool
	}{
		{name: "valid", base: time.Millisecond, maxRetries: 3},
		{name: "zero retries", base: time.Millisecond, maxRetries: 0},
		{name: "nil rand keeps default", base: time.Millisecond, maxRetries: 3, opts: []Option{WithRand(nil)}},
		{name: "zero base", base: 0, maxRetries: 3, wantErr: true},
		{name: "negative base", base: -time.Second, maxRetries: 3, wantErr: true},
		{name: "negative retries", base: time.Millisecond, maxRetries: -1, wantErr: true},
		{name: "zero max sleep", base: time.Millisecond, maxRetries: 3, opts: []Option{WithMaxSleep(0)}, wantErr: true},
		{name: "negative max sleep", base: time.Millisecond, maxRetries: 3, opts: []Option{WithMaxSleep(-1)}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewExponentialBackoff(tt.base, tt.maxRetries, tt.opts...)
			if tt.wantErr {
				require.ErrorIs(t, err, ErrInvalidArgument)
				assert.Nil(t, p)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, p)
		})
	}
}

func TestNewBoundedExponentialBackoffValidation(t *testing.T) {
	tests := []struct {
		name       string
		base, max  time.Duration
		maxRetries int
		wantErr    bool
	}{
		{name: "valid", base: time.Millisecond, max: time.Second, maxRetries: 3},
		{name: "max below base", base: time.Second, max: time.Millisecond, maxRetries: 3},
		{name: "zero max", base: time.Millisecond, max: 0, maxRetries: 3, wantErr: true},
		{name: "zero base", base: 0, max: time.Second, maxRetries: 3, wantErr: true},
		{name: "negative retries", base: time.Millisecond, max: time.Second, maxRetries: -2, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewBoundedExponentialBackoff(tt.base, tt.max, tt.maxRetries)
			if tt.wantErr {
				assert.ErrorIs(t, err, ErrInvalidArgument)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

// upper returns base × (2^(k+1) - 1), the longest sleep before retry k.
func upper(base time.Duration, k int) time.Duration {
	return base * time.Duration(int64(1)<<(k+1)-1)
}

func TestExponentialBackoffBounds(t *testing.T) {
	const base = time.Millisecond
	src := rand.New(rand.NewPCG(1, 2))
	p, err := NewExponentialBackoff(base, MaxExponentialRetries, WithRand(src.IntN))
	require.NoError(t, err)
	for k := range MaxExponentialRetries {
		for range 200 {
			d, ok := p.AllowRetry(k, 0)
			require.True(t, ok, "retry %d", k)
			require.GreaterOrEqual(t, d, base, "retry %d", k)
			require.LessOrEqual(t, d, upper(base, k), "retry %d", k)
		}
	}
}

func TestExponentialBackoffReachesBothEnds(t *testing.T) {
	const base = 10 * time.Millisecond
	src := rand.New(rand.NewPCG(3, 4))
	p, err := NewExponentialBackoff(base, 10, WithRand(src.IntN))
	require.NoError(t, err)
	for k := range 5 { // at most 32 outcomes: 2000 draws see them all
		seen := map[time.Duration]bool{}
		for range 2000 {
			d, _ := p.AllowRetry(k, 0)
			seen[d] = true
		}
		assert.True(t, seen[base], "retry %d never slept the minimum", k)
		assert.True(t, seen[upper(base, k)], "retry %d never slept the maximum", k)
		assert.Len(t, seen, 1<<(k+1)-1, "retry %d: every multiple from 1 to 2^(k+1)-1", k)
	}
}

func TestExponentialBackoffFormula(t *testing.T) {
	const base = time.Millisecond
	tests := []struct {
		name string
		rand func(int) int
		want func(k int) time.Duration
	}{
		{name: "largest draw", rand: maxRand, want: func(k int) time.Duration { return upper(base, k) }},
		{name: "draw 0 counts as 1", rand: zeroRand, want: func(int) time.Duration { return base }},
		{name: "draw 1", rand: func(int) int { return 1 }, want: func(int) time.Duration { return base }},
		{name: "draw below range", rand: func(int) int { return -7 }, want: func(int) time.Duration { return base }},
		{name: "draw above range", rand: func(n int) int { return n + 10 }, want: func(k int) time.Duration { return upper(base, k) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewExponentialBackoff(base, MaxExponentialRetries, WithRand(tt.rand))
			require.NoError(t, err)
			for k := range MaxExponentialRetries {
				d, ok := p.AllowRetry(k, 0)
				require.True(t, ok)
				assert.Equal(t, tt.want(k), d, "retry %d", k)
			}
		})
	}
}

func TestExponentialBackoffRetryCap(t *testing.T) {
	tests := []struct {
		name       string
		maxRetries int
		wantLast   int // last retry allowed; -1 for none
	}{
		{name: "zero", maxRetries: 0, wantLast: -1},
		{name: "one", maxRetries: 1, wantLast: 0},
		{name: "ten", maxRetries: 10, wantLast: 9},
		{name: "at cap", maxRetries: MaxExponentialRetries, wantLast: MaxExponentialRetries - 1},
		{name: "above cap", maxRetries: 100, wantLast: MaxExponentialRetries - 1},
		{name: "far above cap", maxRetries: math.MaxInt, wantLast: MaxExponentialRetries - 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewExponentialBackoff(time.Millisecond, tt.maxRetries, WithRand(maxRand))
			require.NoError(t, err)
			for k := 0; k <= tt.wantLast; k++ {
				d, ok := p.AllowRetry(k, 0)
				require.True(t, ok, "retry %d", k)
				require.Positive(t, d, "retry %d", k)
			}
			for _, k := range []int{tt.wantLast + 1, tt.wantLast + 2, 1000} {
				_, ok := p.AllowRetry(k, 0)
				assert.False(t, ok, "retry %d", k)
			}
		})
	}
}

func TestExponentialBackoffNoOverflow(t *testing.T) {
	tests := []struct {
		name string
		base time.Duration
		k    int
		want time.Duration
	}{
		{name: "k 28 fits", base: time.Second, k: 28, want: time.Second * (1<<29 - 1)},
		{name: "k 29 fits", base: time.Second, k: 29, want: time.Second * (1<<30 - 1)},
		{name: "k beyond 29 counts as 29", base: time.Second, k: 1000, want: time.Second * (1<<30 - 1)},
		{name: "negative k counts as 0", base: time.Second, k: -3, want: time.Second},
		{name: "product saturates", base: time.Hour, k: 28, want: math.MaxInt64},
		{name: "huge base saturates", base: math.MaxInt64 / 2, k: 29, want: math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewExponentialBackoff(tt.base, MaxExponentialRetries, WithRand(maxRand))
			require.NoError(t, err)
			assert.Equal(t, tt.want, p.sleep(tt.k))
		})
	}
}

func TestExponentialBackoffMaxSleep(t *testing.T) {
	const base = 100 * time.Millisecond
	bounded, err := NewBoundedExponentialBackoff(base, time.Second, 10, WithRand(maxRand))
	require.NoError(t, err)
	withOption, err := NewExponentialBackoff(base, 10, WithRand(maxRand), WithMaxSleep(time.Second))
	require.NoError(t, err)
	belowBase, err := NewBoundedExponentialBackoff(base, 30*time.Millisecond, 10, WithRand(zeroRand))
	require.NoError(t, err)
	// Overflowing products are capped too.
	huge, err := NewBoundedExponentialBackoff(time.Hour, 2*time.Hour, MaxExponentialRetries, WithRand(maxRand))
	require.NoError(t, err)

	tests := []struct {
		name string
		p    Policy
		k    int
		want time.Duration
	}{
		{name: "below cap k0", p: bounded, k: 0, want: 100 * time.Millisecond},
		{name: "below cap k1", p: bounded, k: 1, want: 300 * time.Millisecond},
		{name: "below cap k2", p: bounded, k: 2, want: 700 * time.Millisecond},
		{name: "capped k3", p: bounded, k: 3, want: time.Second},
		{name: "capped k9", p: bounded, k: 9, want: time.Second},
		{name: "option capped k3", p: withOption, k: 3, want: time.Second},
		{name: "option below cap k2", p: withOption, k: 2, want: 700 * time.Millisecond},
		{name: "cap below base", p: belowBase, k: 0, want: 30 * time.Millisecond},
		{name: "overflow capped", p: huge, k: 28, want: 2 * time.Hour},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, ok := tt.p.AllowRetry(tt.k, 0)
			require.True(t, ok)
			assert.Equal(t, tt.want, d)
		})
	}

	// With real randomness the cap holds over many draws.
	src := rand.New(rand.NewPCG(5, 6))
	p, err := NewBoundedExponentialBackoff(base, time.Second, 10, WithRand(src.IntN))
	require.NoError(t, err)
	for k := range 10 {
		for range 200 {
			d, ok := p.AllowRetry(k, 0)
			require.True(t, ok)
			require.GreaterOrEqual(t, d, base)
			require.LessOrEqual(t, d, time.Second)
		}
	}
}

func TestDefault(t *testing.T) {
	p := Default()
	assert.True(t, RetriesSessionExpiry(p))
	for k := range 10 {
		for range 100 {
			d, ok := p.AllowRetry(k, time.Hour) // elapsed does not matter
			require.True(t, ok, "retry %d", k)
			require.GreaterOrEqual(t, d, 100*time.Millisecond)
			require.LessOrEqual(t, d, min(upper(100*time.Millisecond, k), 5*time.Second))
		}
	}
	_, ok := p.AllowRetry(10, 0)
	assert.False(t, ok)
}
