package main

import (
	"fmt"
	"strings"
)

const helpMain = `zkcurator runs Apache Curator's ZooKeeper recipes from a shell: a command under a
distributed lock or semaphore or only while leader, barriers that hold and release batch
jobs, queues, service discovery, counters. What it makes is compatible with Curator (Java)
and with the zoocurator Go packages on the same paths.

Usage:
  zkcurator [global flags] <command> [arguments] [flags] [-- command...]

Commands:
  server [--port P] [--data DIR]
        run a ZooKeeper for development on 127.0.0.1:P (default 2181) until Ctrl-C, and
        print the "export ZK_CONNECT=..." line that points the other commands at it
  ls [-R] <path> | get <path> | stat <path> | tree [<path>]   (each takes --json)
        read ZooKeeper: a node's children (-R: every node below it), its data, its stat;
        tree shows the nodes below <path> (default /) and names the recipe nodes it knows
  lock run <path> [--timeout D] [--grace D] [--revocable] -- <command...>
        run a command while holding the lock at <path> (like flock, across machines)
  lock holders <path>
        list who holds the lock at <path> and who waits, in order
  lock revoke <node> [--wait D]
        ask the holder of lock, lease or leader node <node> to let go (holders made
        revocable do: lock run, semaphore run and leader run --revocable)
  leader run <path> [--id ID] [--timeout D] [--grace D] [--revocable] -- <command...>
        run a command only while leading the election at <path> (Curator's LeaderSelector)
  leader who <path> [-v]
        print the leader's participant id (-v: everyone in line, leader first)
  semaphore run <path> --leases N [--timeout D] [--grace D] [--revocable] -- <command...>
        run a command while holding one of the N leases of the semaphore at <path>
  semaphore holders <path> [--leases N]
        list who holds a lease of the semaphore at <path> and who waits
  barrier set|remove|wait <path> [--timeout D]
        set a barrier, remove it (which releases its waiters), or wait until it is removed
  doublebarrier run <path> --members N [--timeout D] -- <command...>
        wait until N members are in, run the command, wait until every member is done
  group members <path>
        list the members of the group at <path> (Curator's GroupMember), "<id> <payload>"
  group join <path> <id> [--data D] [--timeout D] -- <command...>
        be member <id> of the group at <path> while the command runs
  discovery register <name> [--address A] [--port P] [--payload JSON] -- <command...>
        be an instance of service <name> (Curator's service discovery) while the command runs
  discovery list [<name>] | discovery get <name>
        list the services or a service's instances; print one instance's URI
  counter get|add|set <path> [<n>] [--int] [--expect N]
        read, add to or set a distributed counter (Curator's DistributedAtomicLong/Integer)
  sharedcount get|set <path> [<n>] [--with-version] [--version V]
        read or set a shared count (Curator's SharedCount)
  queue put|take|list <path> [<data>] [--kind K] [flags]
        put an item into a queue (Curator's DistributedQueue and kin; --kind simple:
        SimpleDistributedQueue), take one, list them
  help [command]
        show this help, or a command's ("zkcurator help lock run")

Global flags (also accepted after the command):
  --connect host:port[,host:port...][/chroot]
        ZooKeeper to use (default $ZK_CONNECT, else 127.0.0.1:2181)
  --session-timeout D   ZooKeeper session timeout (default: the zoocurator library's
                        default, "go doc framework.WithSessionTimeout"; the server may
                        negotiate it into its bounds). A crashed holder keeps its lock
                        or leadership for up to this long; a shorter one ends sooner
                        on a GC pause or a slow network
  --connect-timeout D   give up connecting after D (default 15s)
  --namespace NS        prefix every path with /NS (Curator's namespace)
  --tls-ca FILE         speak TLS to ZooKeeper (its secure client port), trusting the
                        PEM certificates in FILE (default $ZK_TLS_CA)
  --tls-cert FILE, --tls-key FILE
                        present this PEM client certificate and key (mutual TLS; each
                        implies TLS, trusting the system's roots without --tls-ca;
                        default $ZK_TLS_CERT, $ZK_TLS_KEY)

Durations are written 500ms, 30s, 5m. Flags may be written -flag or --flag.

Exit status:
  the command's own status when it ran (128+N when signal N killed it)
  0    barrier, holders, who, list, revoke, counter, sharedcount, ls, get, stat and
       tree commands succeeded; server was stopped by Ctrl-C or SIGTERM
  1    error: ZooKeeper unreachable, a request failed, holders or list of a path
       that does not exist or is not that recipe's, server's port in use, ...
  2    usage error (a bad path too: ZooKeeper's path rules)
  3    counter set --expect, sharedcount set --version: the value or version was
       another; nothing was written
  4    ls, get, stat, tree: the path does not exist
  5    ls, get, tree: no permission to read the path (its ACL; zkcurator sends no
       credentials); tree and ls -R: to list a node below it (the rest is shown)
  70   the lock, lease or leadership was lost (or revoked) while the command ran; it
       was stopped
  75   --timeout expired before the lock, lease, leadership or barrier was had
  126  the command could not be executed; 127 the command was not found
  130  interrupted while waiting

Examples:
  zkcurator server --data ~/zk-dev              # in one shell; then, in another:
  export ZK_CONNECT=127.0.0.1:2181
  zkcurator tree /locks
  zkcurator lock run /locks/nightly-report -- ./report.sh
  zkcurator lock run /locks/db-migrate --timeout 30s -- make migrate || echo "busy: $?"
  zkcurator --connect zk1:2181,zk2:2181,zk3:2181 lock holders /locks/nightly-report
  zkcurator leader run /leaders/scheduler -- ./scheduler.sh
  zkcurator leader who -v /leaders/scheduler
  zkcurator semaphore run /semaphores/api --leases 3 -- ./call-api.sh
  zkcurator barrier set /jobs/nightly/start     # coordinator, before the workers start
  zkcurator barrier wait /jobs/nightly/start    # each worker, before its work
  zkcurator barrier remove /jobs/nightly/start  # coordinator, once the input is ready
  zkcurator doublebarrier run /jobs/nightly/workers --members 4 -- ./part.sh
  zkcurator group join /groups/indexers worker-7 --data host7:9000 -- ./index.sh
  zkcurator group members /groups/indexers
  zkcurator counter add /counters/jobs-done 1
  zkcurator sharedcount set /config/workers 8
`

const helpServer = `Usage: zkcurator server [--port P] [--data DIR]

Runs a ZooKeeper server for development, in the foreground, until Ctrl-C (or SIGTERM,
SIGHUP); then stops it and exits 0, leaving no server process behind. It listens on
127.0.0.1 only, on port P, and prints the connect string and the line that points
zkcurator at it:

    export ZK_CONNECT=127.0.0.1:2181

It is the ZooKeeper the library's tests and examples start (package zktest): Debian's
zookeeper package (/usr/share/java/zookeeper.jar, run with java) or the release that
ZOOKEEPER_HOME names. Its settings are those of the tests: a tickTime of 200ms (so
sessions of 0.4s to 2m are granted as asked), containers reaped within a second, no
fsync, every four-letter word allowed, TTL nodes enabled. Not for production.

  --port P     the client port (default 2181; 0: any free port). A port in use is
               refused at once (exit 1), before ZooKeeper is started
  --data DIR   keep the data in DIR (created if missing; DIR/data, DIR/zoo.cfg and the
               server's log DIR/server.out) and leave it at exit: the next run on DIR has
               the same nodes. Default: a temporary directory, removed at exit

The server's log is server.out in its directory (printed at start). If the server
stops on its own, zkcurator prints the end of the log and exits 1. If zkcurator itself
is killed (SIGKILL), the server goes with it on Linux (its temporary directory stays).
`

const helpRead = `Usage: zkcurator ls [-R] <path> [--json]
       zkcurator get <path> [--json]
       zkcurator stat <path> [--json]
       zkcurator tree [<path>] [--json]

Read ZooKeeper; they write nothing. The root and /zookeeper may be read; --namespace
applies.

  ls      the names of the node's children, one a line, by name (a lock's, an
          election's and a semaphore's lease nodes in their sequence order: the holder
          first); -R: the path of every node below it, depth first (not the node itself). --json: {"path", "children"}
          or, with -R, {"path", "descendants"}
  get     the node's data: as it is when it is text (a newline added if it has none),
          else Go-quoted. A node zkcurator recognises (a queue item, a lock node, a
          service instance, a recipe's path, or 4 or 8 bytes that are not text: a
          shared count's or a counter's format) gets a line on stderr saying what it is
          and the command that reads it ("zkcurator queue list /jobs").
          --json: {"path", "data", "encoding", "stat", "recipe", "readWith"}, the data
          as a string when it is UTF-8 ("encoding": "utf-8"), else in base64
          ("base64"); recipe and readWith (that hint) only when it is recognised
  stat    the node's stat: czxid, mzxid, pzxid, ctime, mtime (UTC), version, cversion,
          aversion, ephemeralOwner, mode (ephemeral or persistent: ZooKeeper reports
          containers and TTL nodes as persistent), dataLength, numChildren, and the
          recipe node it is when its name says so. --json: the same fields (zxids and
          ephemeralOwner as hex strings, times in ms since the epoch). stat needs no
          permission (ZooKeeper checks none for it)
  tree    the node and every node below it, indented, each with its number of
          children, its data size, its owner session when it is ephemeral, and what it
          is when zkcurator recognises it: a lock node, a leader latch node, a
          semaphore lease, a queue item, a service instance (known by its JSON), or a
          path that holds a lock's, an election's, a semaphore's or a queue's nodes
          (the names of "lock holders", "leader who" and "queue list"). Default path: /.
          --json: an array of {"path", "numChildren", "dataLength", "ephemeralOwner",
          "mode", "recipe", "error"}, one a node, depth first

A node that goes while ls -R or tree walks is left out. A node below <path> whose ACL
does not let zkcurator list it is shown without its children (ls -R says so on stderr);
the status is then 5.

Exit status: 0; 4 the path does not exist; 5 no permission (its ACL; zkcurator sends
no credentials); 2 a bad path (ZooKeeper's rules: starts with /, no trailing /, no
empty, . or .. component); 1 any other error.
`

const helpLockRun = `Usage: zkcurator lock run <path> [--timeout D] [--grace D] [--revocable] [--foreground] -- <command...>

Takes the distributed lock at <path> (Curator's InterProcessMutex: Go and Java holders
exclude each other), runs the command while holding it, releases it when the command
ends, and exits with the command's status. Waiters queue in order (first come, first
served).

  --timeout D    give up waiting for the lock after D and exit 75 (default 0: wait)
  --grace D      when the lock is lost, wait D after SIGTERM before SIGKILL (default 10s)
  --revocable    let go when asked (zkcurator lock revoke, Curator's Revoker): stop the
                 command as if the lock were lost, and exit 70
  --foreground   run the command in zkcurator's process group (for an interactive command
                 that reads the terminal); only the command itself, not its children, is
                 then signalled when the lock is lost; a Ctrl-C reaches it from the
                 terminal, not passed on a second time by zkcurator

The command gets, in its environment:
  ZK_LOCK_TOKEN  a fencing token: a number that grows from one holder of the lock to the
                 next. Pass it to what you write to and have it refuse tokens lower than
                 the highest it has seen: a holder that paused past its session cannot then
                 overwrite its successor's work.
  ZK_LOCK_NODE   the lock node (for "zkcurator lock revoke")
  ZK_LOCK_PATH   the lock's path

The lock may be lost while the command runs: when the connection to ZooKeeper is
suspended (no answer for 2/3 of the session timeout) or the session expires, another
process may get the lock. zkcurator then stops the command (SIGTERM to its process group,
SIGKILL after --grace), says so on stderr and exits 70. Signals zkcurator gets (SIGINT,
SIGTERM, SIGHUP) are passed on to the command. If zkcurator itself dies, its session
ends and the lock passes on: the command's whole process group is killed with it (a
small watchdog shell, which ignores those signals, leads the group and kills it when
zkcurator is gone; with --foreground, on Linux, only the command itself).

A <path> that holds another recipe's nodes (a leader latch's, a semaphore's, a read-write
lock's), whose holders this lock would not exclude, is refused (exit 1) before anything
is made; so it is by leader run and semaphore run (which refuses a lock's path).

Exit status: the command's; 70 lock lost or revoked; 75 timeout; 1 error; 2 usage;
126/127 the command could not be run.
`

const helpLockHolders = `Usage: zkcurator lock holders <path>
       zkcurator participants <path>

Lists the nodes of the lock at <path> in lock order, one a line: "holder" or "waiting",
the node's path, and its data (host:pid for zkcurator, the host's address for Curator).
Works for locks taken by Curator's InterProcessMutex, the Go mutex and zkcurator (and
for a LeaderSelector's path: its holder is the leader).

A free lock lists nothing (and says so on stderr) and exits 0. A path that does not
exist, or that is a semaphore, a leader latch, a read-write lock or no lock at all (its
children are not lock nodes; or it has none but holds data, or is ephemeral: a plain
node), is reported on stderr with what it looks like, and the exit status is 1. A
semaphore is a path whose only children are leases (holding _c_<uuid>-lease- nodes)
and locks (holding lock- nodes): a path with a child named locks alone is not one.
`

const helpLockRevoke = `Usage: zkcurator lock revoke <node> [--wait D]
       zkcurator revoke <node> [--wait D]

Asks the holder of the lock node <node> (see "zkcurator lock holders") to let go,
as Curator's Revoker.attemptRevoke does: it writes __REVOKE__ into the node. Only a holder
that made its lock revocable reacts (zkcurator lock run --revocable, a Go mutex with
WithRevocationListener, Curator's makeRevocable); the others ignore the request.
It works the same on a semaphore's lease node ("zkcurator semaphore holders"; zkcurator
semaphore run --revocable, a Go semaphore with WithRevocationListener) and on a leader's
node (zkcurator leader run --revocable, a Go latch or selector made revocable;
"zkcurator leader who -v" lists them).
Only ephemeral nodes (as lock, lease and election nodes are) are written to.

  --wait D   wait up to D for the node to go; exit 75 if it is still there (default 0:
             do not wait)
`

const helpLeaderRun = `Usage: zkcurator leader run <path> [--id ID] [--timeout D] [--grace D] [--revocable] [--foreground] -- <command...>

Joins the leader election at <path> as participant ID (default host:pid), waits until it
leads, runs the command while it leads, gives leadership up when the command ends (the
next in line then leads), and exits with the command's status. It takes part as a
Curator LeaderSelector does, one turn per run (no auto-requeue): the command is its
takeLeadership. A LeaderSelector rather than a LeaderLatch because its leadership lasts
exactly as long as the work; Go selectors, Curator LeaderSelectors (and Curator
InterProcessMutexes) on the same path queue with it, first come first served. A Curator
LeaderLatch's path is another election ("leader who" reads both).

  --id ID        the participant id, the election node's data (default host:pid)
  --timeout D    give up waiting for leadership after D and exit 75 (default 0: wait)
  --grace D      when leadership is lost, wait D after SIGTERM before SIGKILL (default 10s)
  --revocable    let go when asked ("zkcurator lock revoke $ZK_LEADER_NODE"): stop the
                 command as if leadership were lost, and exit 70
  --foreground   see "zkcurator help lock run"

The command gets, in its environment:
  ZK_LEADER_TOKEN  a fencing token that grows from one leader to the next (see
                   ZK_LOCK_TOKEN in "zkcurator help lock run")
  ZK_LEADER_ID     the participant id
  ZK_LEADER_PATH   the election's path
  ZK_LEADER_NODE   the election node (for "zkcurator lock revoke")

Leadership may be lost while the command runs: when the connection to ZooKeeper is
suspended (no answer for 2/3 of the session timeout), the session expires, or someone
deletes the node. zkcurator then stops the command (SIGTERM to its process group,
SIGKILL after --grace), says so on stderr and exits 70; it does not rejoin (run it
again, e.g. in a loop or from a supervisor, to stand for election again). Signals
zkcurator gets are passed on to the command. If zkcurator itself dies, its session ends
and the next in line leads (the command's process group is killed with it, as for lock
run). A <path> that holds a leader latch's nodes (or a semaphore's, a read-write
lock's) is refused (exit 1).

Exit status: the command's; 70 leadership lost or revoked; 75 timeout; 130 interrupted
while waiting; 1 error; 2 usage; 126/127 the command could not be run.
`

const helpLeaderWho = `Usage: zkcurator leader who <path> [-v]

Prints the participant id of the leader of the election at <path>: a LeaderLatch's
(latch- nodes) or a LeaderSelector's (lock- nodes), made by Curator, the Go package
recipes/leader or "zkcurator leader run". With -v, prints everyone in line, the leader
first, one a line: "leader" or "waiting", the node's path and the participant id.

An election nobody takes part in (a node with no children and no data) prints nothing
(and says so on stderr) and exits 0. A path that does not exist, another recipe's path
(a semaphore, a read-write lock, a queue), a path whose children are not election
nodes, or a plain node (no children, but data; or ephemeral) is reported on stderr with
what it is, and the exit status is 1.
`

const helpSemaphoreRun = `Usage: zkcurator semaphore run <path> --leases N [--timeout D] [--grace D] [--revocable] [--foreground] -- <command...>

Takes one lease of the distributed semaphore at <path> (Curator's
InterProcessSemaphoreV2), runs the command while holding it, returns the lease when the
command ends, and exits with the command's status. At most N commands hold a lease at
once; every participant must use the same N.

  --leases N     the number of leases (required)
  --timeout D    give up waiting for a lease after D and exit 75 (default 0: wait)
  --grace D      when the lease is lost, wait D after SIGTERM before SIGKILL (default 10s)
  --revocable    let go when asked ("zkcurator lock revoke $ZK_LEASE_NODE"): stop the
                 command as if the lease were lost, and exit 70
  --foreground   see "zkcurator help lock run"

The command gets ZK_LEASE_NODE (its lease node) and ZK_SEMAPHORE_PATH. A lost or revoked
lease stops the command as a lost lock does (exit 70). A <path> that holds a lock's, a
leader election's or a read-write lock's nodes is refused (exit 1).
`

const helpSemaphoreHolders = `Usage: zkcurator semaphore holders <path> [--leases N]

Lists the lease nodes of the semaphore at <path> (Curator's InterProcessSemaphoreV2, the
Go semaphore, zkcurator semaphore run) in order, one a line: "holder" or "waiting", the
node's path and its data; then the acquirers queued on the semaphore's inner lock as
"waiting". With --leases N (the semaphore's number of leases), a lease node beyond the
first N is shown as "waiting": its owner made it and waits for a lease to free.

A semaphore nobody holds lists nothing (and says so on stderr) and exits 0. A path that
does not exist or is not a semaphore is reported on stderr, and the exit status is 1.
`

const helpBarrier = `Usage: zkcurator barrier set <path>
       zkcurator barrier remove <path>
       zkcurator barrier wait <path> [--timeout D]

A barrier (Curator's DistributedBarrier) holds everyone who waits on it until it is
removed. set creates it (setting a set barrier is fine), remove deletes it and so
releases every waiter (removing a missing barrier is fine), wait returns once it is not
set (at once if it is not set now), surviving connection loss.

  --timeout D   wait only: give up after D and exit 75 (default 0: wait)
`

const helpDoubleBarrier = `Usage: zkcurator doublebarrier run <path> --members N [--timeout D] [--grace D] [--foreground] -- <command...>

A double barrier (Curator's DistributedDoubleBarrier) lets N members start together and
finish together: run enters the barrier (waiting until N members have entered), runs the
command, then leaves it (waiting until every member that entered has left), and exits
with the command's status. Every member must use the same N.

  --members N   how many members open the barrier (required)
  --timeout D   give up entering, or leaving, after D and exit 75 (default 0: wait)
  --grace D     once interrupted (SIGINT, SIGTERM, SIGHUP: passed on to the command),
                wait at most D for the other members to leave, then exit 130 (default
                10s); a second signal stops waiting at once
  --foreground  see "zkcurator help lock run"

The command gets ZK_BARRIER_PATH. A member that gives up leaves nothing behind.
`

const helpGroup = `Usage: zkcurator group members <path>
       zkcurator group join <path> <id> [--data D] [--timeout D] [--foreground] -- <command...>

A group (Curator's GroupMember) is a node whose children are its members: ephemeral
nodes <path>/<id> holding each member's payload. members prints one line per member,
"<id> <payload>", sorted by id (nothing when the group does not exist). join makes this
process member <id> while the command runs: the member node is created again if someone
deletes it or the session expires, and deleted when the command ends; it exits with the
command's status.

  --data D      the member's payload (default host:pid)
  --timeout D   give up joining after D and exit 75 (default 0: wait)

The command gets ZK_GROUP_PATH and ZK_GROUP_ID.
`

const helpDiscovery = `Usage: zkcurator discovery register <name> [--address A] [--port P] [--ssl-port P] [--id ID]
           [--payload JSON] [--uri-spec T] [--type T] [--timeout D] [--foreground] -- <command...>
       zkcurator discovery list [<name>] [--json]
       zkcurator discovery get <name> [--strategy round-robin|random] [--json]

Service discovery in the registry of Curator's curator-x-discovery (and Spring Cloud
Zookeeper): each instance of service <name> is a node <base>/<name>/<id> holding its JSON.
register makes the command an instance of <name> while it runs: the node is created again
if someone deletes it or the session expires, and deleted when the command ends (or goes
with the session when zkcurator is gone); it exits with the command's status. list prints
the service names, or one line per instance of <name>, "<id> <uri>" (the URI spec built,
else address:port); a service with no instances (or a registry with no services) prints
nothing, says so on stderr and exits 0, one that does not exist is reported on stderr
with exit status 1, as "queue list" does for a queue. (A service's node is a container:
the server deletes it a while after its last instance went.) get prints the URI of one
instance: with --strategy round-robin (the default), the first by id, because each run
starts the rotation over (a loop of gets prints the same one; a program that keeps a
ServiceProvider rotates); with --strategy random, one at random.

  --base P       the registry's base path (default /services), every subcommand
  --address A    the instance's address (default: this host's first non-loopback address)
  --port P, --ssl-port P, --id ID (default: a random UUID)
  --payload J    the payload, JSON (default null)
  --uri-spec T   a URI template such as {scheme}://{address}:{port}
  --type T       DYNAMIC (default), STATIC, PERMANENT or DYNAMIC_SEQUENTIAL
  --timeout D    give up registering after D and exit 75 (default 0: wait)
  --strategy S   get: round-robin (the default) or random
  --json         print instances as their JSON

The command gets ZK_SERVICE_NAME and ZK_SERVICE_ID.
`

const helpCounter = `Usage: zkcurator counter get <path> [--int]
       zkcurator counter add <path> <delta> [--int]
       zkcurator counter set <path> <value> [--int] [--expect N] [--force]

A distributed counter (Curator's DistributedAtomicLong: 8 big-endian bytes in the node
at <path>; with --int, DistributedAtomicInteger: 4 bytes). Go, Curator and zkcurator
processes on the same path change it atomically. A counter whose node does not exist
holds 0; add and set create the node.

  get     prints the value
  add     adds <delta> (write a negative one after --: "counter add /c -- -3") and
          prints the value after it
  set     sets the value; with --expect N, only if the counter holds N (compare-and-set):
          otherwise it says what it holds and exits 3. A node that holds data of
          another format (text, the other size of counter) is not overwritten: set
          says what it holds and exits 1; --force overwrites it. A node with no data
          holds 0.

A write whose connection was lost while it was in flight may or may not have been
applied: the command says so and exits 1; it does not try again (that could add twice).
`

const helpQueue = `Usage: zkcurator queue put <path> <data> [--priority N | --delay D | --id ID | --kind simple]
       zkcurator queue take <path> [--timeout D] [--lock-path P] [--kind K]
       zkcurator queue list <path> [--kind K]

A distributed queue (Curator's DistributedQueue, or with the flags its priority, delay
and id queues): items in persistent sequential nodes <path>/queue-..., in Curator's item
format. With --kind simple, Curator's SimpleDistributedQueue: nodes <path>/qn-..., each
holding one item's bytes as they are. Go, Curator and zkcurator producers and consumers
share it.

  put    queues <data> and prints the item's node; --priority N (lowest first), --delay D
         (due after D) or --id ID name the kind of queue; --kind may say it too (plain,
         id, priority, delay), and must for a simple queue
  take   waits for the first item (in the order of --kind: plain, id, priority, delay or
         simple; default plain), removes it and prints it (a node put with several items
         prints each on a line); with --lock-path, the queue's lock path, it takes the
         item as Curator's safe consumers do (not for a simple queue, which takes an item
         by deleting it: a take that dies then loses it). --timeout D: exit 75 if nothing
         came within D
  list   prints the queued items in order, "<node> <item>" a line; a queue with no items
         says so on stderr (exit 0), a path that does not exist is an error (exit 1)

Items are printed as they are when they are one line of printable text, else Go-quoted.
ZooKeeper is not a high-volume queue: keep queues short (see the README's numbers).
`

const helpSharedCount = `Usage: zkcurator sharedcount get <path> [--with-version]
       zkcurator sharedcount set <path> <value> [--version V] [--force]

A shared count (Curator's SharedCount: a 32-bit integer, 4 big-endian bytes in the node
at <path>) that a fleet reads and agrees on; the Go package sharedcount and Curator
listen to its changes.

  get              prints the value (with --with-version, the value and the node's
                   version); a missing node is an error (exit 1)
  set              sets the value, creating the node if needed; with --version V, only if
                   the node is at version V (what get --with-version printed) and nobody
                   changed it since: otherwise exits 3 and writes nothing. A node that
                   holds data but not 4 bytes (text, an 8-byte counter) is not
                   overwritten: set says what it holds and exits 1; --force overwrites it
`

var helpTopics = map[string]string{
	"":                   helpMain,
	"server":             helpServer,
	"ls":                 helpRead,
	"get":                helpRead,
	"stat":               helpRead,
	"tree":               helpRead,
	"lock":               helpLockRun + "\n" + helpLockHolders + "\n" + helpLockRevoke,
	"lock run":           helpLockRun,
	"lock holders":       helpLockHolders,
	"participants":       helpLockHolders,
	"lock revoke":        helpLockRevoke,
	"revoke":             helpLockRevoke,
	"leader":             helpLeaderRun + "\n" + helpLeaderWho,
	"leader run":         helpLeaderRun,
	"leader who":         helpLeaderWho,
	"semaphore":          helpSemaphoreRun + "\n" + helpSemaphoreHolders,
	"semaphore run":      helpSemaphoreRun,
	"semaphore holders":  helpSemaphoreHolders,
	"barrier":            helpBarrier,
	"barrier set":        helpBarrier,
	"barrier remove":     helpBarrier,
	"barrier wait":       helpBarrier,
	"doublebarrier":      helpDoubleBarrier,
	"doublebarrier run":  helpDoubleBarrier,
	"group":              helpGroup,
	"group members":      helpGroup,
	"group join":         helpGroup,
	"discovery":          helpDiscovery,
	"discovery register": helpDiscovery,
	"discovery list":     helpDiscovery,
	"discovery get":      helpDiscovery,
	"counter":            helpCounter,
	"counter get":        helpCounter,
	"counter add":        helpCounter,
	"counter set":        helpCounter,
	"sharedcount":        helpSharedCount,
	"sharedcount get":    helpSharedCount,
	"sharedcount set":    helpSharedCount,
	"queue":              helpQueue,
	"queue put":          helpQueue,
	"queue take":         helpQueue,
	"queue list":         helpQueue,
}

// help prints the help of the topic named by args to stdout.
func (a *app) help(args []string) error {
	topic := strings.Join(args, " ")
	text, ok := helpTopics[topic]
	if !ok {
		return usagef("", "no help for %q", topic)
	}
	fmt.Fprint(a.stdout, text)
	if topic != "" {
		fmt.Fprint(a.stdout, "\nGlobal flags: --connect, --session-timeout, --connect-timeout, --namespace, --tls-* (see \"zkcurator help\").\n")
	}
	return errHelpShown
}
