package queue

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestItemFormat(t *testing.T) {
	// Curator's ItemSerializer for the items "ab" and "": version, marker, length, bytes, end.
	want := []byte{0, 1, 0, 1, 1, 0, 0, 0, 2, 'a', 'b', 1, 0, 0, 0, 0, 2}
	got := EncodeItems([][]byte{[]byte("ab"), {}})
	assert.Equal(t, want, got)
	items, err := DecodeItems(got)
	require.NoError(t, err)
	require.Len(t, items, 2)
	assert.Equal(t, "ab", string(items[0]))
	assert.Empty(t, items[1])

	for name, data := range map[string][]byte{
		"empty":          nil,
		"short":          {0, 1, 0},
		"bad version":    {0, 1, 0, 2, 2},
		"no end":         {0, 1, 0, 1},
		"bad marker":     {0, 1, 0, 1, 7},
		"short length":   {0, 1, 0, 1, 1, 0, 0},
		"length too big": {0, 1, 0, 1, 1, 0, 0, 0, 9, 'x', 2},
		"negative":       {0, 1, 0, 1, 1, 0xff, 0xff, 0xff, 0xff, 2},
		"trailing bytes": {0, 1, 0, 1, 2, 2},
		"plain text":     []byte("hello, world"),
	} {
		_, err := DecodeItems(data)
		assert.True(t, errors.Is(err, ErrNotAnItem), "%s: %v", name, err)
	}
	big := bytes.Repeat([]byte{7}, 70000)
	items, err = DecodeItems(EncodeItems([][]byte{big}))
	require.NoError(t, err)
	assert.Equal(t, big, items[0])
}

func TestNames(t *testing.T) {
	for p, want := range map[int32]string{
		0: "100000000", 5: "100000005", 255: "1000000FF", 2147483647: "17FFFFFFF",
		-1: "0FFFFFFFF", -2147483648: "080000000",
	} {
		assert.Equal(t, want, PriorityName(p), "priority %d", p)
	}
	assert.Equal(t, "|18C0A7F9D2E|", DelayName(time.UnixMilli(0x18C0A7F9D2E)))
	assert.Equal(t, "|0000000A|", DelayName(time.UnixMilli(10)))
	assert.Equal(t, "|a_b_c|", IDName("a/b|c"))

	id, cleaned, ok := idOf("queue-|job-7|0000000003")
	assert.True(t, ok)
	assert.Equal(t, "job-7", id)
	assert.Equal(t, "queue-0000000003", cleaned)
	_, _, ok = idOf("queue-0000000003")
	assert.False(t, ok)

	assert.Equal(t, int64(0x18C0A7F9D2E), dueOf("queue-|18C0A7F9D2E|0000000001"))
	assert.Equal(t, int64(0), dueOf("queue-0000000001"))
	assert.Equal(t, int64(0), dueOf("queue-|zz|0000000001"))
	assert.Equal(t, "queue-|18C0A7F9D2E|", requeuePrefix("queue-|18C0A7F9D2E|0000000001"))
	assert.Equal(t, "queue-", requeuePrefix("queue-0000000001"))
}

func TestSortNames(t *testing.T) {
	prio := func(p int32, seq string) string { return itemPrefix + PriorityName(p) + seq }
	names := []string{prio(5, "0000000001"), prio(-3, "0000000002"), prio(0, "0000000003"),
		prio(-100, "0000000004"), prio(5, "0000000000"), prio(100, "0000000005")}
	kindPriority.sortNames(names)
	assert.Equal(t, []string{prio(-100, "0000000004"), prio(-3, "0000000002"), prio(0, "0000000003"),
		prio(5, "0000000000"), prio(5, "0000000001"), prio(100, "0000000005")}, names)

	ids := []string{"queue-|b|0000000002", "queue-|a|0000000003", "queue-|c|0000000001"}
	kindID.sortNames(ids)
	assert.Equal(t, []string{"queue-|c|0000000001", "queue-|b|0000000002", "queue-|a|0000000003"}, ids)

	d := func(ms int64, seq string) string { return itemPrefix + DelayName(time.UnixMilli(ms)) + seq }
	// 0xFFFFFFFF and 0x100000000: the hex string of the larger is longer, not greater.
	delays := []string{d(0x100000000, "0000000001"), d(0xFFFFFFFF, "0000000002"), d(0xFFFFFFFF, "0000000000")}
	kindDelay.sortNames(delays)
	assert.Equal(t, []string{d(0xFFFFFFFF, "0000000000"), d(0xFFFFFFFF, "0000000002"), d(0x100000000, "0000000001")}, delays)
}
