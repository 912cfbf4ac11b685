package wire

import "github.com/go-zookeeper/zk"

// Opcodes of ZooKeeper's client requests (ZooDefs.OpCode).
const (
	opNotification         int32 = 0
	opCreate               int32 = 1
	opDelete               int32 = 2
	opExists               int32 = 3
	opGetData              int32 = 4
	opSetData              int32 = 5
	opGetACL               int32 = 6
	opSetACL               int32 = 7
	opGetChildren          int32 = 8
	opSync                 int32 = 9
	opPing                 int32 = 11
	opGetChildren2         int32 = 12
	opCheck                int32 = 13
	opMulti                int32 = 14
	opCreate2              int32 = 15
	opCheckWatches         int32 = 17
	opRemoveWatches        int32 = 18
	opCreateContainer      int32 = 19
	opCreateTTL            int32 = 21
	opMultiRead            int32 = 22
	opAuth                 int32 = 100
	opSetWatches           int32 = 101
	opSASL                 int32 = 102
	opGetEphemerals        int32 = 103
	opGetAllChildrenNumber int32 = 104
	opSetWatches2          int32 = 105
	opAddWatch             int32 = 106
	opWhoAmI               int32 = 107
	opCloseSession         int32 = -11
	opError                int32 = -1
)

// Reserved xids: the server answers a watch event, a ping, an auth packet and a
// set-watches request with these; ordinary requests count up from 1 and skip them.
const (
	xidNotification int32 = -1
	xidPing         int32 = -2
	xidAuth         int32 = -4
	xidSetWatches   int32 = -8
)

// CreateMode is the kind of node a create makes (ZooKeeper's CreateMode flags).
type CreateMode int32

// The create modes. The TTL modes need a server with extended types enabled
// (zookeeper.extendedTypesEnabled=true) and a TTL greater than zero.
const (
	ModePersistent                  CreateMode = 0
	ModeEphemeral                   CreateMode = 1
	ModePersistentSequential        CreateMode = 2
	ModeEphemeralSequential         CreateMode = 3
	ModeContainer                   CreateMode = 4
	ModePersistentWithTTL           CreateMode = 5
	ModePersistentSequentialWithTTL CreateMode = 6
)

// isTTL reports whether the mode makes a node with a time to live.
func (m CreateMode) isTTL() bool {
	return m == ModePersistentWithTTL || m == ModePersistentSequentialWithTTL
}

// opcode is the request a create of this mode is sent as: createContainer and createTTL
// for those kinds, create2 (which answers with the node's Stat) for the others.
func (m CreateMode) opcode() int32 {
	switch {
	case m == ModeContainer:
		return opCreateContainer
	case m.isTTL():
		return opCreateTTL
	default:
		return opCreate2
	}
}

// AddWatchMode is the kind of watch addWatch sets (ZooKeeper's AddWatchMode).
type AddWatchMode int32

// The addWatch modes: a persistent watch fires for the node's data, its creation and
// deletion and its children's list, and stays set; a recursive one fires for the node
// and every node below it, except for children's lists.
const (
	AddWatchPersistent          AddWatchMode = 0
	AddWatchPersistentRecursive AddWatchMode = 1
)

// WatcherType names the watches that checkWatches and removeWatches act on
// (ZooKeeper's Watcher.WatcherType).
type WatcherType int32

// The watcher types. ZooKeeper 3.8 knows Children, Data and Any only (it answers the
// others with CodeMarshallingError): there, a persistent watch is removed as Any.
const (
	WatcherChildren            WatcherType = 1
	WatcherData                WatcherType = 2
	WatcherAny                 WatcherType = 3
	WatcherPersistent          WatcherType = 4
	WatcherPersistentRecursive WatcherType = 5
)

// Event types that go-zookeeper does not name, for a watch that was removed. ZooKeeper's
// server never sends them: its Java client makes them itself after removeWatches, so a
// client of this package that wants them makes them too.
const (
	EventDataWatchRemoved       zk.EventType = 5
	EventChildWatchRemoved      zk.EventType = 6
	EventPersistentWatchRemoved zk.EventType = 7
)
