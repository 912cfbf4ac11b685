// Package otelzk reports a zoocurator client's activity as OpenTelemetry metrics: the
// latency of each ZooKeeper request by operation, errors by code, the session's
// connection state, and how long lock recipes (mutex, read-write lock, semaphore) wait
// for and hold their locks.
//
// It is a module of its own (github.com/zoocurator/zoocurator/otelzk): a program that
// does not import it downloads and links nothing of OpenTelemetry.
//
//	m, err := otelzk.New(otel.GetMeterProvider())
//	if err != nil { ... }
//	defer m.Close()
//	client, err := framework.Connect(ctx, "zk1:2181", m.Options()...)
//
// One Metrics serves one client: its session-state gauge follows that client.
//
// # Instruments
//
//   - zookeeper.client.request.duration (histogram, s): every request sent, retries
//     included; attributes zookeeper.operation and zookeeper.status (framework.ErrorCode:
//     "OK", "NONODE", "CONNECTIONLOSS", …).
//   - zookeeper.client.request.errors (counter): failed requests; attributes
//     zookeeper.operation and zookeeper.status.
//   - zookeeper.client.session.state (gauge): 1 for the client's current connection state
//     and 0 for the others; attribute zookeeper.state ("CONNECTED", "SUSPENDED",
//     "RECONNECTED", "LOST", "READ_ONLY", or "NONE" before the first connection).
//   - zookeeper.client.session.state_changes (counter): attribute zookeeper.state.
//   - zookeeper.lock.wait.duration (histogram, s): acquisitions; attributes
//     zookeeper.recipe ("mutex", "rwlock-read", "rwlock-write", "semaphore") and
//     zookeeper.lock.outcome ("acquired" or "failed"; a busy TryAcquire fails).
//   - zookeeper.lock.hold.duration (histogram, s): last releases; attribute
//     zookeeper.recipe.
//
// Paths are not attributes (a path per lock would make a series per lock); use
// framework.WithRequestObserver and framework.WithLockObserver directly for them.
package otelzk
