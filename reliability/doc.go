// Package reliability is the project-wide proof that the recipes keep their promises
// when ZooKeeper and the network misbehave. It holds only tests: each recipe runs against
// a 3-member ensemble (package zktest) while a fault is injected — connection drops,
// stalls shorter and longer than the session timeout, a killed leader, lost quorum, a
// stopped server, a lost create reply, a paused client process — and checkers that can
// fail (each has a negative control) look at what happened:
//
//   - overlap: never more holders than allowed, counting a holder until its lease's Done;
//   - fencing: a store that rejects writes with an older token loses no update, even when a
//     paused process wakes up after its session expired;
//   - liveness: after the fault heals every worker finishes within a bound;
//   - cleanliness: no recipe nodes, ephemerals or watches left; containers reaped; no
//     goroutines leaked;
//   - linearizability: the histories of a znode register, a recipes/atomic counter and a
//     mutex-protected fenced store, recorded under every fault, are checked with
//     porcupine (an operation with an unknown outcome may or may not have been applied).
//
// The scenario family (family_test.go) runs every recipe that owns or consumes nodes twice
// on one client and across name reuse (its nodes and parent deleted and the parent made
// again, sequence numbers restarting), with an ownership ledger (a node never owned by two
// instances, none deleted or replaced under its owner, nothing left) and a conservation
// checker for consumers; both have negative controls. TestTLSRecipes (tls_test.go) runs
// every recipe over mutual TLS, on a standalone server's secure port: the lock kinds, the
// family's two-instances scenarios, the caches and discovery's provider, with the same
// checkers.
//
// TestUnderFaults runs every registered scenario under each fault, the scenarios of one
// fault at the same time, each in its own world; a fault of the whole ensemble is injected
// once for all of them (batch_test.go). TestDefectsReplayed replays fixed defects that
// the machinery can express; each failed before its fix.
//
// `go test ./reliability` runs the fast profile (part of `make test`); `make soak` runs
// random scenario × fault rounds for as long as asked (-soak=30m) and prints the counts
// per fault × recipe × checker.
package reliability
