package wire

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The servers are handed out in one shuffled order, round after round; a round is
// over when the list comes back to the server of the last connection (or to the first
// handed out), which then comes last.
func TestHostListRoundRobin(t *testing.T) {
	h, err := NewHostList([]string{"a:1", "b:1", "c:1"})
	require.NoError(t, err)
	var first []string
	var rounds []bool
	for range 3 {
		s, round := h.next()
		first = append(first, s)
		rounds = append(rounds, round)
	}
	assert.ElementsMatch(t, []string{"a:1", "b:1", "c:1"}, first)
	assert.Equal(t, []bool{false, false, false}, rounds)
	s, round := h.next()
	assert.Equal(t, first[0], s)
	assert.True(t, round, "back at the first server: a round reached none")

	// Connected to first[1]: the next round starts after it and ends with it.
	s, _ = h.next()
	require.Equal(t, first[1], s)
	h.connected()
	var next []string
	for range 3 {
		s, round := h.next()
		next = append(next, s)
		assert.Equal(t, s == first[1], round)
	}
	assert.Equal(t, []string{first[2], first[0], first[1]}, next)
}

func TestHostListUpdateReplacesServers(t *testing.T) {
	h, err := NewHostList([]string{"a:1"})
	require.NoError(t, err)
	h.next()
	h.connected()
	require.NoError(t, h.Update([]string{"c:1", "b:1"}))
	assert.Equal(t, []string{"b:1", "c:1"}, h.Servers())
	var got []string
	for range 2 {
		s, round := h.next()
		assert.False(t, round)
		got = append(got, s)
	}
	slices.Sort(got)
	assert.Equal(t, []string{"b:1", "c:1"}, got)
	assert.Error(t, h.Update(nil))
	_, err = NewHostList(nil)
	assert.Error(t, err)
}

// A lone server is dialled again at once after its connection ended, then once a round.
func TestHostListLoneServerRetriedAtOnce(t *testing.T) {
	h, err := NewHostList([]string{"a:1"})
	require.NoError(t, err)
	_, round := h.next()
	assert.False(t, round)
	_, round = h.next()
	assert.True(t, round)
	h.connected()
	_, round = h.next()
	assert.False(t, round, "the first dial after a connection")
	_, round = h.next()
	assert.True(t, round)
}
