package queue

import (
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Curator's item format (ItemSerializer): a 4-byte big-endian version, then for each
// item the marker byte 1, a 4-byte big-endian length and the payload, then the byte 2.
const (
	formatVersion = 0x00010001
	itemMarker    = 0x01
	endMarker     = 0x02
)

// itemPrefix starts the name of every item node of the distributed queues; simplePrefix
// every node of a simple queue.
const (
	itemPrefix   = "queue-"
	simplePrefix = "qn-"
	separator    = '|'
	seqDigits    = 10
)

// EncodeItems returns the node data Curator's DistributedQueue writes for payloads (one
// node may carry several items: PutMulti).
func EncodeItems(payloads [][]byte) []byte {
	n := 4 + 1
	for _, p := range payloads {
		n += 5 + len(p)
	}
	b := make([]byte, 0, n)
	b = binary.BigEndian.AppendUint32(b, formatVersion)
	for _, p := range payloads {
		b = append(b, itemMarker)
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return append(b, endMarker)
}

// DecodeItems parses node data in Curator's item format. Its error wraps ErrNotAnItem.
func DecodeItems(data []byte) ([][]byte, error) {
	if len(data) < 4 {
		return nil, fmt.Errorf("%w: %d bytes, too short for the format version", ErrNotAnItem, len(data))
	}
	if v := binary.BigEndian.Uint32(data); v != formatVersion {
		return nil, fmt.Errorf("%w: format version %#x, want %#x", ErrNotAnItem, v, formatVersion)
	}
	rest := data[4:]
	var out [][]byte
	for {
		if len(rest) == 0 {
			return nil, fmt.Errorf("%w: no end marker", ErrNotAnItem)
		}
		op := rest[0]
		rest = rest[1:]
		if op == endMarker {
			if len(rest) != 0 {
				return nil, fmt.Errorf("%w: %d bytes after the end marker", ErrNotAnItem, len(rest))
			}
			return out, nil
		}
		if op != itemMarker {
			return nil, fmt.Errorf("%w: marker %#x, want %#x or %#x", ErrNotAnItem, op, itemMarker, endMarker)
		}
		if len(rest) < 4 {
			return nil, fmt.Errorf("%w: truncated item length", ErrNotAnItem)
		}
		size := int64(int32(binary.BigEndian.Uint32(rest)))
		rest = rest[4:]
		if size < 0 || size > int64(len(rest)) {
			return nil, fmt.Errorf("%w: item length %d with %d bytes left", ErrNotAnItem, size, len(rest))
		}
		out = append(out, rest[:size:size])
		rest = rest[size:]
	}
}

// PriorityName is the part Curator's DistributedPriorityQueue puts after "queue-" for a
// priority: "1" and 8 upper-case hex digits for priority >= 0, "0" and the 8 hex digits
// of the two's complement for a negative one, so that names sort by priority, lowest
// first.
func PriorityName(priority int32) string {
	lead := "1"
	if priority < 0 {
		lead = "0"
	}
	return fmt.Sprintf("%s%08X", lead, uint32(priority))
}

// DelayName is the part Curator's DistributedDelayQueue puts after "queue-" for a due
// time: "|", the due time in Unix milliseconds as (at least 8) upper-case hex digits, "|".
func DelayName(due time.Time) string {
	return fmt.Sprintf("%c%08X%c", separator, due.UnixMilli(), separator)
}

// IDName is the part Curator's DistributedIdQueue puts after "queue-" for an id: the id
// between two "|", with every "/" and "|" of the id replaced by "_".
func IDName(id string) string {
	id = strings.NewReplacer("/", "_", "|", "_").Replace(id)
	return string(separator) + id + string(separator)
}

// dueOf returns the due time (Unix ms) a delay queue's node name carries: the hex
// digits between its last two "|"; 0 (due now) when it has none, as Curator reads it.
func dueOf(name string) int64 {
	i2 := strings.LastIndexByte(name, separator)
	if i2 <= 0 {
		return 0
	}
	i1 := strings.LastIndexByte(name[:i2], separator)
	if i1 <= 0 || i2 <= i1+1 {
		return 0
	}
	v, err := strconv.ParseInt(name[i1+1:i2], 16, 64)
	if err != nil {
		return 0
	}
	return v
}

// idOf splits an id queue's node name into its id and the name without "|id|".
// ok is false for a name without two "|".
func idOf(name string) (id, cleaned string, ok bool) {
	i1 := strings.IndexByte(name, separator)
	if i1 < 0 {
		return name, name, false
	}
	i2 := strings.IndexByte(name[i1+1:], separator)
	if i2 < 0 {
		return name, name, false
	}
	i2 += i1 + 1
	return name[i1+1 : i2], name[:i1] + name[i2+1:], true
}

// requeuePrefix is the name a requeued node is created under: the node's name without
// its sequence suffix (its priority, id or due time kept).
func requeuePrefix(name string) string {
	if len(name) >= len(itemPrefix)+seqDigits {
		return name[:len(name)-seqDigits]
	}
	return itemPrefix
}

// kind is what differs between the distributed queues: node names and their order.
type kind int

const (
	kindPlain kind = iota
	kindID
	kindPriority
	kindDelay
)

// bySequence reports whether the kind's nodes are consumed in the order of their sequence
// numbers alone, so that a node created after a listing sorts after every node in it.
func (k kind) bySequence() bool { return k == kindPlain || k == kindID }

// sortNames orders item node names as Curator's queue of that kind does; ties (none
// but for delay queues) keep the name order.
func (k kind) sortNames(names []string) {
	sort.Strings(names)
	switch k {
	case kindID:
		sort.SliceStable(names, func(i, j int) bool {
			_, a, _ := idOf(names[i])
			_, b, _ := idOf(names[j])
			return a < b
		})
	case kindDelay:
		sort.SliceStable(names, func(i, j int) bool { return dueOf(names[i]) < dueOf(names[j]) })
	}
}
