package queue

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
)

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

// JSON is a Serializer of T as JSON (encoding/json): use JSON[Job]{} for a queue of Job.
// It writes what json.Marshal writes, except that "<", ">" and "&" are written as they
// are, as Java's Jackson writes them (json.Marshal escapes them as \u003c and the like,
// which Jackson reads all the same), so that a Curator queue whose QueueSerializer uses
// Jackson reads and writes the same items. Reading is json.Unmarshal's: fields not in T
// are ignored, and bytes that are not one JSON value of T's shape (another writer's, say)
// are refused with an error that names T; a consumer then reports the node as a
// *BadItemError (matching ErrNotAnItem), skips it and leaves it in place. The JSON literal
// null (Jackson's null reference) is such bytes unless T is a pointer, interface, slice or
// map type, whose nil it stands for: it is refused for any other T (a struct, a number, a
// string...), rather than read as T's zero value, which a handler could not tell from an
// item put as that value.
type JSON[T any] struct{}

// Serialize returns item's JSON.
func (JSON[T]) Serialize(item T) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(item); err != nil {
		return nil, fmt.Errorf("queue: JSON: %v: %w", reflect.TypeFor[T](), err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// Deserialize reads data as one JSON value of T; null is refused unless T is a pointer,
// interface, slice or map type.
func (JSON[T]) Deserialize(data []byte) (T, error) {
	var item T
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		switch reflect.TypeFor[T]().Kind() {
		case reflect.Pointer, reflect.Interface, reflect.Slice, reflect.Map:
		default:
			return item, fmt.Errorf("queue: JSON: not a %v: null", reflect.TypeFor[T]())
		}
	}
	if err := json.Unmarshal(data, &item); err != nil {
		var zero T
		return zero, fmt.Errorf("queue: JSON: not a %v: %w", reflect.TypeFor[T](), err)
	}
	return item, nil
}
