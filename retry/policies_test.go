package retry

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestConstructorValidation(t *testing.T) {
	tests := []struct {
		name    string
		make    func() (Policy, error)
		wantErr bool
	}{
		{name: "NTimes", make: func() (Policy, error) { return NewNTimes(3, time.Second) }},
		{name: "NTimes zero", make: func() (Policy, error) { return NewNTimes(0, 0) }},
		{name: "NTimes negative n", make: func() (Policy, error) { return NewNTimes(-1, time.Second) }, wantErr: true},
		{name: "NTimes negative sleep", make: func() (Policy, error) { return NewNTimes(1, -time.Second) }, wantErr: true},
		{name: "OneTime", make: func() (Policy, error) { return NewOneTime(time.Second) }},
		{name: "OneTime negative sleep", make: func() (Policy, error) { return NewOneTime(-1) }, wantErr: true},
		{name: "UntilElapsed", make: func() (Policy, error) { return NewUntilElapsed(time.Minute, time.Second) }},
		{name: "UntilElapsed zero sleep", make: func() (Policy, error) { return NewUntilElapsed(time.Minute, 0) }},
		{name: "UntilElapsed zero max", make: func() (Policy, error) { return NewUntilElapsed(0, time.Second) }, wantErr: true},
		{name: "UntilElapsed negative sleep", make: func() (Policy, error) { return NewUntilElapsed(time.Minute, -1) }, wantErr: true},
		{name: "Forever", make: func() (Policy, error) { return NewForever(time.Second) }},
		{name: "Forever zero", make: func() (Policy, error) { return NewForever(0) }, wantErr: true},
		{name: "Forever negative", make: func() (Policy, error) { return NewForever(-time.Second) }, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.make()
			if tt.wantErr {
				assert.ErrorIs(t, err, ErrInvalidArgument)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

// must returns p and panics if err is not nil, like template.Must; the tests
// use it only with valid arguments.
func must[P Policy](p P, err error) P {
	if err != nil {
		panic(err)
	}
	return p
}

func TestFixedSleepPolicies(t *testing.T) {
	type call struct {
		retryCount int
		elapsed    time.Duration
		wantSleep  time.Duration
		wantOK     bool
	}
	tests := []struct {
		name  string
		p     Policy
		calls []call
	}{
		{
			name: "NTimes allows n retries",
			p:    must(NewNTimes(3, 50*time.Millisecond)),
			calls: []call{
				{0, 0, 50 * time.Millisecond, true},
				{1, time.Hour, 50 * time.Millisecond, true},
				{2, 0, 50 * time.Millisecond, true},
				{3, 0, 0, false},
				{100, 0, 0, false},
			},
		},
		{
			name:  "NTimes zero allows none",
			p:     must(NewNTimes(0, time.Second)),
			calls: []call{{0, 0, 0, false}},
		},
		{
			name: "OneTime allows one retry",
			p:    must(NewOneTime(time.Second)),
			calls: []call{
				{0, 0, time.Second, true},
				{1, 0, 0, false},
			},
		},
		{
			name: "UntilElapsed retries while elapsed is below the maximum",
			p:    must(NewUntilElapsed(time.Second, 100*time.Millisecond)),
			calls: []call{
				{0, 0, 100 * time.Millisecond, true},
				{5, 999 * time.Millisecond, 100 * time.Millisecond, true},
				{1 << 20, 500 * time.Millisecond, 100 * time.Millisecond, true},
				{1, time.Second, 0, false},
				{0, time.Hour, 0, false},
			},
		},
		{
			name: "Forever always retries",
			p:    must(NewForever(time.Second)),
			calls: []call{
				{0, 0, time.Second, true},
				{1 << 30, 24 * time.Hour, time.Second, true},
			},
		},
		{
			name: "SessionFailed defers to its policy",
			p:    SessionFailed(must(NewNTimes(1, time.Second))),
			calls: []call{
				{0, 0, time.Second, true},
				{1, 0, 0, false},
			},
		},
		{
			name:  "SessionFailed of nil never retries",
			p:     SessionFailed(nil),
			calls: []call{{0, 0, 0, false}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range tt.calls {
				sleep, ok := tt.p.AllowRetry(c.retryCount, c.elapsed)
				assert.Equal(t, c.wantOK, ok, "AllowRetry(%d, %v)", c.retryCount, c.elapsed)
				if c.wantOK {
					assert.Equal(t, c.wantSleep, sleep, "AllowRetry(%d, %v)", c.retryCount, c.elapsed)
				}
			}
		})
	}
}

func TestRetriesSessionExpiry(t *testing.T) {
	n := must(NewNTimes(1, 0))
	tests := []struct {
		name string
		p    Policy
		want bool
	}{
		{name: "plain policy", p: n, want: true},
		{name: "default", p: Default(), want: true},
		{name: "SessionFailed", p: SessionFailed(n), want: false},
		{name: "SessionFailed twice", p: SessionFailed(SessionFailed(n)), want: false},
		{name: "SessionFailed through backoff round trip", p: FromBackOff(ToBackOff(SessionFailed(n))), want: false},
		{name: "nil", p: nil, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, RetriesSessionExpiry(tt.p))
		})
	}
}
