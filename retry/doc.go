// Package retry holds the retry policies of Apache Curator, built on
// github.com/cenkalti/backoff/v4, and the loop that applies them to ZooKeeper
// operations.
//
// A [Policy] answers one question: after a failure, may the operation be
// tried again, and how long should the caller sleep first? The package
// offers Curator's policies under their Curator names:
//
//   - [ExponentialBackoff] (Curator's ExponentialBackoffRetry and
//     BoundedExponentialBackoffRetry): a random sleep that grows with the
//     retry count, optionally capped.
//   - [NTimes] (RetryNTimes) and [NewOneTime] (RetryOneTime): a fixed sleep,
//     a fixed number of times.
//   - [UntilElapsed] (RetryUntilElapsed): a fixed sleep while less than a
//     given time has passed since the first attempt.
//   - [Forever] (RetryForever): a fixed sleep, without end.
//   - [SessionFailed] (SessionFailedRetryPolicy): another policy that does
//     not retry once the session has expired.
//
// [Do] runs an operation and retries it under a policy while it fails with a
// retryable ZooKeeper error (see [IsRetryable]): a lost connection, no
// reachable server, a moved session, a closing server, [ErrOperationTimeout],
// and, unless the policy is wrapped with [SessionFailed], an expired session.
// Any other error, including the context's, is returned at once and as it is.
// A cancelled context ends the wait between attempts at once.
//
// Policies and the backoff/v4 package work together in both directions:
// [FromBackOff] makes any backoff.BackOff a Policy, and [ToBackOff] makes a
// Policy usable wherever backoff/v4 expects a backoff.BackOff.
//
// Retrying is only safe for operations that may be applied twice. A create
// whose reply was lost may have happened on the server; the recipes that
// build on this package deal with that themselves (for example with
// protected, sequential node names), and callers of [Do] must do the same.
package retry
