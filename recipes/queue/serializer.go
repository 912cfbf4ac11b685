package queue

// Serializer turns items into bytes and back. Curator's QueueSerializer is the same
// contract: the bytes are one item's payload inside Curator's item format (or a simple
// queue's whole node), so a Go and a Java queue sharing a path must agree on them.
type Serializer[T any] interface {
	Serialize(item T) ([]byte, error)
	Deserialize(data []byte) (T, error)
}

// Bytes is the default Serializer: items are byte slices, stored as they are. Pass
// Bytes{} to a constructor to get a queue of []byte.
type Bytes struct{}

// Serialize returns item itself.
func (Bytes) Serialize(item []byte) ([]byte, error) { return item, nil }

// Deserialize returns a copy of data.
func (Bytes) Deserialize(data []byte) ([]byte, error) { return append([]byte{}, data...), nil }

// String is a Serializer of strings as their UTF-8 bytes (what Curator users usually
// write with a String-to-bytes QueueSerializer).
type String struct{}

// Serialize returns the string's bytes.
func (String) Serialize(item string) ([]byte, error) { return []byte(item), nil }

// Deserialize returns data as a string.
func (String) Deserialize(data []byte) (string, error) { return string(data), nil }
