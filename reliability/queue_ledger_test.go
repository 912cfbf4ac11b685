package reliability_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/recipes/queue"
)

// The queue checker attributes a not-removed report to its item whatever the order in
// which the report and the put's record reach the ledger. A consumer can take (and fail
// to remove) an item as soon as its node exists, before the producer that created it has
// returned from Put and recorded the node: the report names a node the ledger does not
// know yet. Attributed at report time, it is counted as naming "no node a put returned":
// the item's explained duplicate is flagged (1), and the report offsets a duplicate of
// another item whose node is unknown, hiding it (2).
func TestQueueCheckerAttributesReportBeforePut(t *testing.T) {
	bg := context.Background()

	// (1) A legitimate duplicate flagged.
	l := newQueueLedger()
	l.report(&queue.NotRemovedError{Path: "/q/queue-0000000020", Reason: "lock gone"})
	l.put("e", "/q/queue-0000000020", nil)
	require.NoError(t, l.deliver(bg, "e"))
	require.NoError(t, l.deliver(bg, "e"))
	_, unexplained, _ := l.check()
	assert.Zero(t, unexplained, "e's duplicate is explained by the report naming its node")

	// (2) A real duplicate missed.
	l = newQueueLedger()
	l.report(&queue.NotRemovedError{Path: "/q/queue-0000000020", Reason: "lock gone"})
	l.put("e", "/q/queue-0000000020", nil)
	l.put("f", "", errors.New("connection lost"))
	for _, it := range []string{"e", "f", "f", "f"} {
		require.NoError(t, l.deliver(bg, it))
	}
	_, unexplained, _ = l.check()
	assert.Equal(t, 1, unexplained, "f's third delivery: e's report does not explain it")
}
