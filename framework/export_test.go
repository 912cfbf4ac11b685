package framework

import (
	"math/bits"
	"reflect"
	"sync"
	"unsafe"
)

// ZKWatchers counts the watch channels go-zookeeper holds for path (with namespace) on
// the client's connection: every one of them stays until the node changes or the session
// ends, since go-zookeeper cannot remove a watch. It reads go-zookeeper's private map under
// its own lock.
func ZKWatchers(c *Client, path string) int {
	conn := c.loadConn()
	if w, ok := conn.(*wireConn); ok { // our own connection: one per kind
		return bits.OnesCount8(uint8(w.cl.Watching(c.fullPath(path))))
	}
	v := reflect.ValueOf(conn.(gozk).Conn).Elem()
	lock := (*sync.Mutex)(unsafe.Pointer(v.FieldByName("watchersLock").UnsafeAddr()))
	lock.Lock()
	defer lock.Unlock()
	m := v.FieldByName("watchers")
	n := 0
	it := m.MapRange()
	for it.Next() {
		if it.Key().FieldByName("path").String() == c.fullPath(path) {
			n += it.Value().Len()
		}
	}
	return n
}
