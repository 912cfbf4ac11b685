package otelzk

import (
	"context"
	"fmt"
	"sync/atomic"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/zoocurator/zoocurator/framework"
)

// scope is the instrumentation scope the instruments are created under.
const scope = "github.com/zoocurator/zoocurator/otelzk"

// states are the connection states the session-state gauge reports, "NONE" first (the
// state before the first connection).
var states = []framework.State{0, framework.Connected, framework.Suspended, framework.Reconnected, framework.Lost, framework.ReadOnly}

func stateName(s framework.State) string {
	if s == 0 {
		return "NONE"
	}
	return s.String()
}

// Metrics turns one client's requests, state changes and lock waits and holds into
// OpenTelemetry metrics. Pass Options to framework.New or framework.Connect. Safe for
// concurrent use.
type Metrics struct {
	reqDuration  metric.Float64Histogram
	reqErrors    metric.Int64Counter
	stateChanges metric.Int64Counter
	lockWait     metric.Float64Histogram
	lockHold     metric.Float64Histogram
	registration metric.Registration

	state atomic.Int64 // the client's current framework.State; 0 before the first
}

// New creates the instruments on mp's meter for this package.
func New(mp metric.MeterProvider) (*Metrics, error) {
	if mp == nil {
		return nil, fmt.Errorf("otelzk: %w: nil meter provider", framework.ErrInvalidArgument)
	}
	meter := mp.Meter(scope)
	m := &Metrics{}
	var err error
	if m.reqDuration, err = meter.Float64Histogram("zookeeper.client.request.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of the requests sent to ZooKeeper, retries counted one by one.")); err != nil {
		return nil, fmt.Errorf("otelzk: %w", err)
	}
	if m.reqErrors, err = meter.Int64Counter("zookeeper.client.request.errors", metric.WithUnit("{request}"),
		metric.WithDescription("Requests to ZooKeeper that failed, by operation and error code.")); err != nil {
		return nil, fmt.Errorf("otelzk: %w", err)
	}
	if m.stateChanges, err = meter.Int64Counter("zookeeper.client.session.state_changes", metric.WithUnit("{change}"),
		metric.WithDescription("Connection state changes, by the state entered.")); err != nil {
		return nil, fmt.Errorf("otelzk: %w", err)
	}
	if m.lockWait, err = meter.Float64Histogram("zookeeper.lock.wait.duration", metric.WithUnit("s"),
		metric.WithDescription("Time lock recipes waited to acquire, by recipe and outcome.")); err != nil {
		return nil, fmt.Errorf("otelzk: %w", err)
	}
	if m.lockHold, err = meter.Float64Histogram("zookeeper.lock.hold.duration", metric.WithUnit("s"),
		metric.WithDescription("Time lock recipes held a lock or lease, by recipe.")); err != nil {
		return nil, fmt.Errorf("otelzk: %w", err)
	}
	gauge, err := meter.Int64ObservableGauge("zookeeper.client.session.state", metric.WithUnit("{state}"),
		metric.WithDescription("1 for the client's current connection state, 0 for the others."))
	if err != nil {
		return nil, fmt.Errorf("otelzk: %w", err)
	}
	m.registration, err = meter.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		cur := framework.State(m.state.Load())
		for _, s := range states {
			v := int64(0)
			if s == cur {
				v = 1
			}
			o.ObserveInt64(gauge, v, metric.WithAttributes(attribute.String("zookeeper.state", stateName(s))))
		}
		return nil
	}, gauge)
	if err != nil {
		return nil, fmt.Errorf("otelzk: %w", err)
	}
	return m, nil
}

// Options returns the client options that feed m: a request observer, a state listener
// and a lock observer.
func (m *Metrics) Options() []framework.Option {
	return []framework.Option{
		framework.WithRequestObserver(m.observeRequest),
		framework.WithStateListener(m.observeState),
		framework.WithLockObserver(m.observeLock),
	}
}

// Close unregisters the session-state gauge's callback. It may be called more than once.
func (m *Metrics) Close() error {
	if m.registration == nil {
		return nil
	}
	return m.registration.Unregister()
}

func (m *Metrics) observeRequest(ri framework.RequestInfo) {
	ctx := context.Background()
	attrs := metric.WithAttributes(attribute.String("zookeeper.operation", ri.Op),
		attribute.String("zookeeper.status", framework.ErrorCode(ri.Err)))
	m.reqDuration.Record(ctx, ri.Duration.Seconds(), attrs)
	if ri.Err != nil {
		m.reqErrors.Add(ctx, 1, attrs)
	}
}

func (m *Metrics) observeState(s framework.State) {
	m.state.Store(int64(s))
	m.stateChanges.Add(context.Background(), 1, metric.WithAttributes(attribute.String("zookeeper.state", stateName(s))))
}

func (m *Metrics) observeLock(li framework.LockInfo) {
	ctx := context.Background()
	recipe := attribute.String("zookeeper.recipe", li.Recipe)
	switch li.Event {
	case framework.LockAcquired, framework.LockFailed:
		m.lockWait.Record(ctx, li.Duration.Seconds(), metric.WithAttributes(recipe,
			attribute.String("zookeeper.lock.outcome", li.Event.String())))
	case framework.LockReleased:
		m.lockHold.Record(ctx, li.Duration.Seconds(), metric.WithAttributes(recipe))
	}
}
