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
	// ErrSessionLost is returned by Leave when the member's node vanished while it was
	// inside the barrier: its session expired, and the other members stopped counting it.
	ErrSessionLost = sentinel.New("doublebarrier: session lost while inside the barrier", framework.ErrLost)
)
