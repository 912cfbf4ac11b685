package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/examples/internal/demotest"
)

func TestRun(t *testing.T) {
	out := demotest.Run(t, run, 60*time.Second)
	want := "A: holds the lock\n" +
		"storage: accepted A's write\n" +
		"A: pauses (its traffic is stalled) with a write still to send\n" +
		"B: holds the lock after the server expired A's session\n" +
		"B's token is greater than A's: true\n" +
		"storage: accepted B's write\n" +
		"A: wakes up and sends its write\n" +
		"storage: late write refused (storage: token older than the highest seen)\n" +
		"A: looks at its lease at last: Done is closed, the lock was lost\n" +
		"storage holds: A: balance=100\n" +
		"storage holds: B: balance=80\n"
	assert.Equal(t, want, out)
}

func TestStorageFences(t *testing.T) {
	var s storage
	require.NoError(t, s.Write(5, "a"))
	require.NoError(t, s.Write(5, "b"), "the same holder writes again")
	require.NoError(t, s.Write(7, "c"))
	require.ErrorIs(t, s.Write(6, "d"), errStaleToken)
	assert.Equal(t, []string{"a", "b", "c"}, s.Records())
}
