package framework

import (
	"reflect"
	"sync"
	"unsafe"
)

// ZKWatchers counts the watch channels go-zookeeper holds for path (with namespace) on
// the client's connection: every one of them stays until the node changes or the session
// ends, since go-zookeeper cannot remove a watch. It reads go-zookeeper's private map under
// its own lock.
func ZKWatchers(c *Client, path string) int {
	conn := c.conn.Load()
	v := reflect.ValueOf(conn).Elem()
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
