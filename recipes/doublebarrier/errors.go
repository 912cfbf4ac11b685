package doublebarrier

import (
	"errors"

	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/sentinel"
)

var (
	// ErrAlreadyEntered is returned by Enter on a member that is entering or inside the
	// barrier already: one DoubleBarrier value is one member.
	ErrAlreadyEntered = errors.New("doublebarrier: already entered")
	// ErrNotEntered is returned by Leave on a member that is not inside the barrier.
	ErrNotEntered = sentinel.New("doublebarrier: not entered", framework.ErrNotHeld)
	// ErrCountedBeforeWithdrawn is matched by the error of an Enter that failed (its
	// context ended) and withdrew its node, when the barrier may have opened with that
	// node counted before it went: the others may have gone in counting this member,
	// which is out. The error matches the cause (ctx.Err()) too.
	ErrCountedBeforeWithdrawn = errors.New("doublebarrier: the barrier may have opened counting this member before it withdrew")
	// ErrSessionLost is returned by Leave when the member's node vanished while it was
	// inside the barrier: its session expired, and the other members stopped counting it.
	ErrSessionLost = sentinel.New("doublebarrier: session lost while inside the barrier", framework.ErrLost)
	// ErrNodeDeleted is returned by Leave when the member's node vanished while it was
	// inside the barrier and its session lived: someone else deleted it, and the other
	// members stopped counting it. The session, and what it holds, is not lost. It
	// matches framework.ErrLost (what the member held in the barrier is gone), not
	// ErrSessionLost.
	ErrNodeDeleted = sentinel.New("doublebarrier: member node deleted by someone else while inside the barrier", framework.ErrLost)
)
