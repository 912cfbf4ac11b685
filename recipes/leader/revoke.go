package leader

import (
	"context"
	"fmt"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/locks"
)

// Revoke asks the participant whose node is at nodePath (a Participant's Node; the
// leader's is the first) to let go, by writing __REVOKE__ into it (Curator's
// Revoker.attemptRevoke). Only a participant made revocable (WithLatchRevocationListener,
// WithSelectorRevocationListener) reacts. A node that no longer exists is not an error.
func Revoke(ctx context.Context, c *framework.Client, nodePath string) error {
	if err := locks.Revoke(ctx, c, nodePath); err != nil {
		return fmt.Errorf("leader: %w", err)
	}
	return nil
}
