package testutil

import (
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/framework"
)

// Watchers counts go-zookeeper's watch channels on one node, by kind of watch.
type Watchers struct {
	Data, Exists, Children int
}

// ZKWatchers counts the watch channels that go-zookeeper holds for path (the server's
// path: with the namespace, if the client has one) on c's current connection. Each one
// stays until the node changes or the session ends, since go-zookeeper v1.0.4 cannot
// remove a watch: a recipe that set a new watch on every call, however the call ended,
// makes these counts grow with the calls, which the server cannot show (it keeps one
// watch per path, kind and session).
//
// There is no API for this. ZKWatchers reads framework.Client's unexported conn and
// go-zookeeper's private watcher map, under go-zookeeper's own lock, as framework's own
// tests do (framework/export_test.go, which this package cannot reach). If either has
// changed shape it fails the test rather than count nothing.
func ZKWatchers(t testing.TB, c *framework.Client, path string) Watchers {
	t.Helper()
	cf := reflect.ValueOf(c).Elem().FieldByName("conn")
	require.True(t, cf.IsValid(), "framework.Client has no field conn: update testutil.ZKWatchers")
	ptr, ok := reflect.NewAt(cf.Type(), unsafe.Pointer(cf.UnsafeAddr())).Interface().(*atomic.Pointer[zk.Conn])
	require.True(t, ok, "framework.Client's conn is a %s, not an atomic.Pointer[zk.Conn]: update testutil.ZKWatchers", cf.Type())
	conn := ptr.Load()
	if conn == nil {
		return Watchers{}
	}
	cv := reflect.ValueOf(conn).Elem()
	lf, mf := cv.FieldByName("watchersLock"), cv.FieldByName("watchers")
	require.True(t, lf.IsValid() && lf.Type() == reflect.TypeOf(sync.Mutex{}) && mf.IsValid() && mf.Kind() == reflect.Map,
		"go-zookeeper's Conn has no watchersLock and watchers map: update testutil.ZKWatchers")
	lock := (*sync.Mutex)(unsafe.Pointer(lf.UnsafeAddr()))
	lock.Lock()
	defer lock.Unlock()
	var n Watchers
	for it := mf.MapRange(); it.Next(); {
		k := it.Key()
		if k.FieldByName("path").String() != path {
			continue
		}
		switch k.FieldByName("wType").Int() { // go-zookeeper's watchType: data, exist, child
		case 0:
			n.Data += it.Value().Len()
		case 1:
			n.Exists += it.Value().Len()
		case 2:
			n.Children += it.Value().Len()
		}
	}
	return n
}
