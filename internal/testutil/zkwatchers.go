package testutil

import (
	"reflect"
	"sync"
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

// ZKWatchers counts the watches that the client's connection holds for path (the
// server's path: with the namespace, if the client has one) on c's current connection:
// go-zookeeper's watch channels, or the one-shot watches of our own connection (one per
// kind; ZOOCURATOR_CONN=wire). Each go-zookeeper channel stays until the node changes
// or the session ends, since go-zookeeper v1.0.4 cannot remove a watch: a recipe that
// set a new watch on every call, however the call ended, makes these counts grow with
// the calls, which the server cannot show (it keeps one watch per path, kind and
// session).
//
// There is no API for this. ZKWatchers reads framework.Client's unexported conn and
// go-zookeeper's private watcher map, under go-zookeeper's own lock, as framework's own
// tests do (framework/export_test.go, which this package cannot reach). If either has
// changed shape it fails the test rather than count nothing.
func ZKWatchers(t testing.TB, c *framework.Client, path string) Watchers {
	t.Helper()
	cf := reflect.ValueOf(c).Elem().FieldByName("conn")
	require.True(t, cf.IsValid(), "framework.Client has no field conn: update testutil.ZKWatchers")
	box := reachable(cf).Addr().MethodByName("Load").Call(nil)[0]
	if box.IsNil() {
		return Watchers{}
	}
	inner := box.Elem().Field(0) // connBox{zkConn}
	require.Equal(t, reflect.Interface, inner.Kind(), "framework's connBox holds no interface: update testutil.ZKWatchers")
	if inner.IsNil() {
		return Watchers{}
	}
	cv := reachable(inner).Elem()
	if cv.Kind() == reflect.Pointer { // our own connection: *wireConn{cl *wire.Client, ...}
		cl := reachable(cv.Elem().FieldByName("cl"))
		require.True(t, cl.IsValid(), "framework's wireConn has no field cl: update testutil.ZKWatchers")
		ks := cl.MethodByName("Watching").Call([]reflect.Value{reflect.ValueOf(path)})[0].Uint()
		return Watchers{Data: int(ks & 1), Exists: int(ks >> 1 & 1), Children: int(ks >> 2 & 1)}
	}
	zc := cv.FieldByName("Conn") // gozk{*zk.Conn}
	conn, ok := zc.Interface().(*zk.Conn)
	require.True(t, ok, "framework's connection is a %s: update testutil.ZKWatchers", cv.Type())
	cv = reflect.ValueOf(conn).Elem()
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

// reachable returns v (an addressable value reached through unexported fields) as a
// value whose methods may be called and whose contents may be read.
func reachable(v reflect.Value) reflect.Value {
	return reflect.NewAt(v.Type(), unsafe.Pointer(v.UnsafeAddr())).Elem()
}
