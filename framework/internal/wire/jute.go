package wire

import (
	"encoding/binary"
	"fmt"

	"github.com/go-zookeeper/zk"
)

// encoder appends jute's binary encoding to a buffer: integers big-endian, a boolean as
// one byte, a buffer or string as an int32 length (-1 for nil) and its bytes, a vector as
// an int32 count (-1 for nil) and its elements.
type encoder struct{ b []byte }

func (e *encoder) int32(v int32) { e.b = binary.BigEndian.AppendUint32(e.b, uint32(v)) }
func (e *encoder) int64(v int64) { e.b = binary.BigEndian.AppendUint64(e.b, uint64(v)) }

func (e *encoder) bool(v bool) {
	if v {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

func (e *encoder) buffer(v []byte) {
	if v == nil {
		e.int32(-1)
		return
	}
	e.int32(int32(len(v)))
	e.b = append(e.b, v...)
}

func (e *encoder) string(v string) {
	e.int32(int32(len(v)))
	e.b = append(e.b, v...)
}

func (e *encoder) strings(v []string) {
	if v == nil {
		e.int32(-1)
		return
	}
	e.int32(int32(len(v)))
	for _, s := range v {
		e.string(s)
	}
}

func (e *encoder) acls(v []zk.ACL) {
	if v == nil {
		e.int32(-1)
		return
	}
	e.int32(int32(len(v)))
	for _, a := range v {
		e.int32(a.Perms)
		e.string(a.Scheme)
		e.string(a.ID)
	}
}

// decoder reads jute's binary encoding. The first error sticks: every later read returns
// a zero value, so a record's decode method reads all its fields and checks err once.
// It never panics and never allocates more than the bytes it was given can hold.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
	}
}

// take returns the next n bytes, or nil and an error if fewer remain.
func (d *decoder) take(n int, what string) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b)-d.off {
		d.fail("%s needs %d bytes at offset %d, %d left", what, n, d.off, len(d.b)-d.off)
		return nil
	}
	p := d.b[d.off : d.off+n]
	d.off += n
	return p
}

func (d *decoder) remaining() int { return len(d.b) - d.off }

func (d *decoder) int32(what string) int32 {
	p := d.take(4, what)
	if p == nil {
		return 0
	}
	return int32(binary.BigEndian.Uint32(p))
}

func (d *decoder) int64(what string) int64 {
	p := d.take(8, what)
	if p == nil {
		return 0
	}
	return int64(binary.BigEndian.Uint64(p))
}

func (d *decoder) bool(what string) bool {
	p := d.take(1, what)
	if p == nil {
		return false
	}
	return p[0] != 0
}

// length reads a length or count: -1 means nil; other negative values and counts that
// the remaining bytes cannot hold (at minSize bytes an element) are errors.
func (d *decoder) length(what string, minSize int) (n int, isNil bool) {
	v := d.int32(what + " length")
	if d.err != nil {
		return 0, true
	}
	if v == -1 {
		return 0, true
	}
	if v < 0 || (minSize > 0 && int64(v) > int64(d.remaining()/minSize)) {
		d.fail("%s length %d with %d bytes left", what, v, d.remaining())
		return 0, true
	}
	return int(v), false
}

func (d *decoder) buffer(what string) []byte {
	n, isNil := d.length(what, 1)
	if isNil {
		return nil
	}
	p := d.take(n, what)
	if p == nil {
		return nil
	}
	return append(make([]byte, 0, n), p...)
}

func (d *decoder) string(what string) string {
	n, isNil := d.length(what, 1)
	if isNil {
		return ""
	}
	return string(d.take(n, what))
}

func (d *decoder) strings(what string) []string {
	n, isNil := d.length(what, 4)
	if isNil {
		return nil
	}
	v := make([]string, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		v = append(v, d.string(what))
	}
	return v
}

func (d *decoder) acls(what string) []zk.ACL {
	n, isNil := d.length(what, 12)
	if isNil {
		return nil
	}
	v := make([]zk.ACL, 0, n)
	for i := 0; i < n && d.err == nil; i++ {
		var a zk.ACL
		a.Perms = d.int32(what + " perms")
		a.Scheme = d.string(what + " scheme")
		a.ID = d.string(what + " id")
		v = append(v, a)
	}
	return v
}

// statSize is the encoded size of a Stat: six longs and five ints.
const statSize = 6*8 + 5*4

func (e *encoder) stat(s *zk.Stat) {
	if s == nil {
		s = &zk.Stat{}
	}
	e.int64(s.Czxid)
	e.int64(s.Mzxid)
	e.int64(s.Ctime)
	e.int64(s.Mtime)
	e.int32(s.Version)
	e.int32(s.Cversion)
	e.int32(s.Aversion)
	e.int64(s.EphemeralOwner)
	e.int32(s.DataLength)
	e.int32(s.NumChildren)
	e.int64(s.Pzxid)
}

func (d *decoder) stat() *zk.Stat {
	if d.remaining() < statSize {
		d.take(statSize, "stat")
		return nil
	}
	return &zk.Stat{
		Czxid:          d.int64("czxid"),
		Mzxid:          d.int64("mzxid"),
		Ctime:          d.int64("ctime"),
		Mtime:          d.int64("mtime"),
		Version:        d.int32("version"),
		Cversion:       d.int32("cversion"),
		Aversion:       d.int32("aversion"),
		EphemeralOwner: d.int64("ephemeralOwner"),
		DataLength:     d.int32("dataLength"),
		NumChildren:    d.int32("numChildren"),
		Pzxid:          d.int64("pzxid"),
	}
}
