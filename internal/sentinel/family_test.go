package sentinel_test

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/zoocurator/zoocurator/cache"
	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/curatortest"
	"github.com/zoocurator/zoocurator/internal/locks"
	"github.com/zoocurator/zoocurator/internal/versioned"
	"github.com/zoocurator/zoocurator/recipes/atomic"
	"github.com/zoocurator/zoocurator/recipes/doublebarrier"
	"github.com/zoocurator/zoocurator/recipes/groupmember"
	"github.com/zoocurator/zoocurator/recipes/leader"
	"github.com/zoocurator/zoocurator/recipes/multilock"
	"github.com/zoocurator/zoocurator/recipes/mutex"
	"github.com/zoocurator/zoocurator/recipes/persistentnode"
	"github.com/zoocurator/zoocurator/recipes/queue"
	"github.com/zoocurator/zoocurator/recipes/rwlock"
	"github.com/zoocurator/zoocurator/recipes/semaphore"
	"github.com/zoocurator/zoocurator/recipes/sharedcount"
	"github.com/zoocurator/zoocurator/retry"
	"github.com/zoocurator/zoocurator/zktest"
)

// roots are the families: one sentinel per meaning that the library's errors share. A
// user writes one errors.Is per meaning, whatever package the error came from.
var roots = map[string]error{
	"framework.ErrClosed":          framework.ErrClosed,
	"framework.ErrNotStarted":      framework.ErrNotStarted,
	"framework.ErrUnknownOutcome":  framework.ErrUnknownOutcome,
	"framework.ErrInvalidArgument": framework.ErrInvalidArgument,
	"framework.ErrNotConnected":    framework.ErrNotConnected,
	"framework.ErrAlreadyStarted":  framework.ErrAlreadyStarted,
	"framework.ErrLost":            framework.ErrLost,
	"framework.ErrNotHeld":         framework.ErrNotHeld,
	"framework.ErrLocked":          framework.ErrLocked,
	"framework.ErrAlreadyHeld":     framework.ErrAlreadyHeld,
	"framework.ErrBadData":         framework.ErrBadData,
	"framework.ErrWrappedVersion":  framework.ErrWrappedVersion,
}

// sentinel is one exported sentinel and the families (roots) it must match; it must
// match no other. No family: the meaning is the package's own.
type sentinel struct {
	err      error
	families []string
}

func own(err error) sentinel                    { return sentinel{err: err} }
func of(err error, families ...string) sentinel { return sentinel{err: err, families: families} }

const (
	closed     = "framework.ErrClosed"
	notStarted = "framework.ErrNotStarted"
	unknown    = "framework.ErrUnknownOutcome"
	wrapped    = "framework.ErrWrappedVersion"
	invalidArg = "framework.ErrInvalidArgument"
	notConn    = "framework.ErrNotConnected"
	started    = "framework.ErrAlreadyStarted"
	lost       = "framework.ErrLost"
	notHeld    = "framework.ErrNotHeld"
	locked     = "framework.ErrLocked"
	held       = "framework.ErrAlreadyHeld"
	badData    = "framework.ErrBadData"
)

// families names every exported sentinel of the module ("dir.Name", dir relative to the
// module root) with its families. A sentinel declared in the module and missing here
// fails the test: a new sentinel must say which meaning it shares.
var families = map[string]sentinel{
	// framework: the roots, ZooKeeper's own conditions, and framework's own meanings.
	"framework.ErrClosed":           of(framework.ErrClosed, closed),
	"framework.ErrNotStarted":       of(framework.ErrNotStarted, notStarted),
	"framework.ErrUnknownOutcome":   of(framework.ErrUnknownOutcome, unknown),
	"framework.ErrInvalidArgument":  of(framework.ErrInvalidArgument, invalidArg),
	"framework.ErrNotConnected":     of(framework.ErrNotConnected, notConn),
	"framework.ErrAlreadyStarted":   of(framework.ErrAlreadyStarted, started),
	"framework.ErrLost":             of(framework.ErrLost, lost),
	"framework.ErrNotHeld":          of(framework.ErrNotHeld, notHeld),
	"framework.ErrLocked":           of(framework.ErrLocked, locked),
	"framework.ErrAlreadyHeld":      of(framework.ErrAlreadyHeld, held),
	"framework.ErrBadData":          of(framework.ErrBadData, badData),
	"framework.ErrWrappedVersion":   of(framework.ErrWrappedVersion, wrapped),
	"framework.ErrInvalidPath":      of(framework.ErrInvalidPath, invalidArg),
	"framework.ErrDataTooLarge":     own(framework.ErrDataTooLarge),
	"framework.ErrFenced":           own(framework.ErrFenced),
	"framework.ErrSessionChanged":   own(framework.ErrSessionChanged),
	"framework.ErrRolledBack":       own(framework.ErrRolledBack),
	"framework.ErrNoNode":           own(framework.ErrNoNode),
	"framework.ErrNodeExists":       own(framework.ErrNodeExists),
	"framework.ErrBadVersion":       own(framework.ErrBadVersion),
	"framework.ErrNotEmpty":         own(framework.ErrNotEmpty),
	"framework.ErrNoAuth":           own(framework.ErrNoAuth),
	"framework.ErrAuthFailed":       own(framework.ErrAuthFailed),
	"framework.ErrInvalidACL":       own(framework.ErrInvalidACL),
	"framework.ErrSessionExpired":   own(framework.ErrSessionExpired),
	"framework.ErrSessionMoved":     own(framework.ErrSessionMoved),
	"framework.ErrConnectionClosed": own(framework.ErrConnectionClosed),
	"framework.ErrNoServer":         own(framework.ErrNoServer),
	"framework.ErrNoChildrenForEph": own(framework.ErrNoChildrenForEph),
	"framework.ErrInvalidFlags":     own(framework.ErrInvalidFlags),

	"retry.ErrInvalidArgument":  of(retry.ErrInvalidArgument, invalidArg),
	"retry.ErrNilOperation":     of(retry.ErrNilOperation, invalidArg),
	"retry.ErrOperationTimeout": own(retry.ErrOperationTimeout),
	"retry.ErrRetriesExhausted": own(retry.ErrRetriesExhausted),

	"cache.ErrClosed":         of(cache.ErrClosed, closed),
	"cache.ErrAlreadyStarted": of(cache.ErrAlreadyStarted, started),

	"discovery.ErrInvalidName":       of(discovery.ErrInvalidName, invalidArg),
	"discovery.ErrInvalidInstance":   of(discovery.ErrInvalidInstance, invalidArg),
	"discovery.ErrInvalidURISpec":    of(discovery.ErrInvalidURISpec, invalidArg),
	"discovery.ErrNotInstance":       of(discovery.ErrNotInstance, badData),
	"discovery.ErrNotRegistered":     of(discovery.ErrNotRegistered, notHeld),
	"discovery.ErrAlreadyRegistered": own(discovery.ErrAlreadyRegistered),
	"discovery.ErrConflict":          own(discovery.ErrConflict),
	"discovery.ErrClosed":            of(discovery.ErrClosed, closed),
	"discovery.ErrNotStarted":        of(discovery.ErrNotStarted, notStarted),
	"discovery.ErrAlreadyStarted":    of(discovery.ErrAlreadyStarted, started),
	"discovery.ErrNoInstance":        own(discovery.ErrNoInstance),
	"discovery.ErrStale":             own(discovery.ErrStale),

	"internal/locks.ErrNotHeld":   of(locks.ErrNotHeld, notHeld),
	"internal/locks.ErrLeaseLost": of(locks.ErrLeaseLost, lost),
	"internal/locks.ErrReleased":  own(locks.ErrReleased),
	"internal/locks.ErrLocked":    of(locks.ErrLocked, locked),
	"internal/locks.ErrNodeLost":  of(locks.ErrNodeLost, lost),

	"internal/versioned.ErrUnknownOutcome": of(versioned.ErrUnknownOutcome, unknown),
	"internal/versioned.ErrConflict":       own(versioned.ErrConflict),
	"internal/versioned.ErrWrappedVersion": of(versioned.ErrWrappedVersion, wrapped),
	"internal/versioned.ErrNodeReplaced":   of(versioned.ErrNodeReplaced, unknown),
	"internal/versioned.ErrCreatedAgain":   of(versioned.ErrCreatedAgain, unknown),

	"internal/curatortest.ErrUnavailable": own(curatortest.ErrUnavailable),
	"internal/curatortest.ErrExited":      own(curatortest.ErrExited),
	"internal/curatortest.ErrBenchFailed": own(curatortest.ErrBenchFailed),

	"zktest.ErrUnavailable": own(zktest.ErrUnavailable),
	"zktest.ErrUnsupported": own(zktest.ErrUnsupported),
	"zktest.ErrClosed":      own(zktest.ErrClosed), // a test server's closing, not a client's
	"zktest.ErrPortInUse":   own(zktest.ErrPortInUse),

	"recipes/atomic.ErrUnknownOutcome": of(atomic.ErrUnknownOutcome, unknown),
	"recipes/atomic.ErrNodeReplaced":   of(atomic.ErrNodeReplaced, unknown),
	"recipes/atomic.ErrBadData":        of(atomic.ErrBadData, badData),

	"recipes/doublebarrier.ErrAlreadyEntered":         own(doublebarrier.ErrAlreadyEntered),
	"recipes/doublebarrier.ErrCountedBeforeWithdrawn": own(doublebarrier.ErrCountedBeforeWithdrawn),
	"recipes/doublebarrier.ErrNodeDeleted":            of(doublebarrier.ErrNodeDeleted, lost),
	"recipes/doublebarrier.ErrNotEntered":             of(doublebarrier.ErrNotEntered, notHeld),
	"recipes/doublebarrier.ErrSessionLost":            of(doublebarrier.ErrSessionLost, lost),

	"recipes/groupmember.ErrClosed":         of(groupmember.ErrClosed, closed),
	"recipes/groupmember.ErrNotStarted":     of(groupmember.ErrNotStarted, notStarted),
	"recipes/groupmember.ErrAlreadyStarted": of(groupmember.ErrAlreadyStarted, started),

	"recipes/leader.ErrClosed":         of(leader.ErrClosed, closed),
	"recipes/leader.ErrNotStarted":     of(leader.ErrNotStarted, notStarted),
	"recipes/leader.ErrAlreadyStarted": of(leader.ErrAlreadyStarted, started),
	"recipes/leader.ErrNotLeader":      of(leader.ErrNotLeader, notHeld),
	"recipes/leader.ErrLeadershipLost": of(leader.ErrLeadershipLost, lost),
	"recipes/leader.ErrNoLeader":       own(leader.ErrNoLeader),

	"recipes/multilock.ErrNoLocks":       of(multilock.ErrNoLocks, invalidArg),
	"recipes/multilock.ErrDuplicatePath": of(multilock.ErrDuplicatePath, invalidArg),
	"recipes/multilock.ErrNotHeld":       of(multilock.ErrNotHeld, notHeld),

	"recipes/mutex.ErrLocked":       of(mutex.ErrLocked, locked),
	"recipes/mutex.ErrAlreadyHeld":  of(mutex.ErrAlreadyHeld, held),
	"recipes/mutex.ErrNotHeld":      of(mutex.ErrNotHeld, notHeld),
	"recipes/mutex.ErrLeaseLost":    of(mutex.ErrLeaseLost, lost),
	"recipes/mutex.ErrReleased":     own(mutex.ErrReleased),
	"recipes/mutex.ErrNodeVanished": of(mutex.ErrNodeVanished, lost),

	"recipes/persistentnode.ErrClosed":         of(persistentnode.ErrClosed, closed),
	"recipes/persistentnode.ErrNotStarted":     of(persistentnode.ErrNotStarted, notStarted),
	"recipes/persistentnode.ErrAlreadyStarted": of(persistentnode.ErrAlreadyStarted, started),

	"recipes/queue.ErrNilSerializer":     of(queue.ErrNilSerializer, invalidArg),
	"recipes/queue.ErrInvalidArgument":   of(queue.ErrInvalidArgument, invalidArg),
	"recipes/queue.ErrNotAnItem":         of(queue.ErrNotAnItem, badData),
	"recipes/queue.ErrEmpty":             own(queue.ErrEmpty),
	"recipes/queue.ErrMaybeTwice":        of(queue.ErrMaybeTwice, unknown),
	"recipes/queue.ErrNotRemoved":        own(queue.ErrNotRemoved),
	"recipes/queue.ErrAttemptsExhausted": own(queue.ErrAttemptsExhausted),
	"recipes/queue.ErrMaybeGone":         of(queue.ErrMaybeGone, unknown),

	"recipes/rwlock.ErrLocked":      of(rwlock.ErrLocked, locked),
	"recipes/rwlock.ErrUpgrade":     own(rwlock.ErrUpgrade),
	"recipes/rwlock.ErrAlreadyHeld": of(rwlock.ErrAlreadyHeld, held),
	"recipes/rwlock.ErrNotHeld":     of(rwlock.ErrNotHeld, notHeld),
	"recipes/rwlock.ErrLeaseLost":   of(rwlock.ErrLeaseLost, lost),
	"recipes/rwlock.ErrReleased":    own(rwlock.ErrReleased),

	"recipes/semaphore.ErrNoLeases":     of(semaphore.ErrNoLeases, locked),
	"recipes/semaphore.ErrTooMany":      of(semaphore.ErrTooMany, invalidArg),
	"recipes/semaphore.ErrAlreadyHeld":  of(semaphore.ErrAlreadyHeld, held),
	"recipes/semaphore.ErrBadCount":     of(semaphore.ErrBadCount, badData),
	"recipes/semaphore.ErrNotHeld":      of(semaphore.ErrNotHeld, notHeld),
	"recipes/semaphore.ErrLeaseLost":    of(semaphore.ErrLeaseLost, lost),
	"recipes/semaphore.ErrReleased":     own(semaphore.ErrReleased),
	"recipes/semaphore.ErrNodeVanished": of(semaphore.ErrNodeVanished, lost),

	"recipes/sharedcount.ErrConflict":       own(sharedcount.ErrConflict),
	"recipes/sharedcount.ErrUnknownOutcome": of(sharedcount.ErrUnknownOutcome, unknown),
	"recipes/sharedcount.ErrNodeReplaced":   of(sharedcount.ErrNodeReplaced, unknown),
	"recipes/sharedcount.ErrNotStarted":     of(sharedcount.ErrNotStarted, notStarted),
	"recipes/sharedcount.ErrAlreadyStarted": of(sharedcount.ErrAlreadyStarted, started),
	"recipes/sharedcount.ErrClosed":         of(sharedcount.ErrClosed, closed),
	"recipes/sharedcount.ErrBadData":        of(sharedcount.ErrBadData, badData),
}

// moduleRoot is the directory holding the module's go.mod.
func moduleRoot(t *testing.T) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("no caller information")
	}
	dir := filepath.Dir(file)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above " + filepath.Dir(file))
		}
		dir = parent
	}
}

// declared parses every non-test Go file of the module (not the nested modules, not
// testdata) and returns its exported package-level sentinels, "dir.ErrName" with dir
// relative to the module root, each with the name of its package.
func declared(t *testing.T) map[string]string {
	t.Helper()
	root := moduleRoot(t)
	found := map[string]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
				return filepath.SkipDir
			}
			if path != root {
				if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
					return filepath.SkipDir // a nested module
				}
				if rel, _ := filepath.Rel(root, path); rel == filepath.Join("framework", "internal") {
					// The framework's own internals: no user sees their errors (only the
					// framework may use them, in errors of its own), and no package here may import them.
					return filepath.SkipDir
				}
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				for _, n := range spec.(*ast.ValueSpec).Names {
					if isSentinelName(n.Name) {
						found[filepath.ToSlash(rel)+"."+n.Name] = f.Name.Name
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// isSentinelName reports whether name is Err followed by an upper-case letter.
func isSentinelName(name string) bool {
	return len(name) > 3 && strings.HasPrefix(name, "Err") && name[3] >= 'A' && name[3] <= 'Z'
}

// TestEverySentinelHasAFamily walks the module's sentinels and checks that each one is
// in the table and matches, with errors.Is, exactly the families the table gives it.
func TestEverySentinelHasAFamily(t *testing.T) {
	found := declared(t)
	if len(found) < 50 {
		t.Fatalf("found only %d sentinels: the walk is broken", len(found))
	}
	var names []string
	for n := range found {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s, ok := families[n]
		if !ok {
			t.Errorf("%s has no family in the table: say which meaning it shares (a root of roots) or that it is the package's own", n)
			continue
		}
		want := map[string]bool{}
		for _, f := range s.families {
			if roots[f] == nil {
				t.Errorf("%s: family %s is not a root", n, f)
			}
			want[f] = true
		}
		for rn, r := range roots {
			if got := errors.Is(s.err, r); got != want[rn] {
				t.Errorf("%s (%q): errors.Is(_, %s) = %v, want %v", n, s.err, rn, got, want[rn])
			}
		}
	}
	for n := range families {
		if _, ok := found[n]; !ok {
			t.Errorf("%s is in the table but not declared in the module", n)
		}
	}
}

// TestSentinelMessagesHaveOnePrefix checks that a sentinel's message names one package at
// most, its own: "leader: closed", never "leader: framework: closed".
func TestSentinelMessagesHaveOnePrefix(t *testing.T) {
	found := declared(t)
	for n, pkg := range found {
		s, ok := families[n]
		if !ok {
			continue // TestEverySentinelHasAFamily says so
		}
		if isRoot(s.err) && !strings.HasPrefix(n, "framework.") {
			continue // the root itself, under another name: its message is the root's
		}
		checkOnePrefix(t, n, pkg, s.err.Error())
	}
}

// isRoot reports whether err is one of the roots.
func isRoot(err error) bool {
	for _, r := range roots {
		if err == r {
			return true
		}
	}
	return false
}

// prefixes are the package prefixes an error message may carry.
var prefixes = []string{"framework: ", "retry: ", "cache: ", "discovery: ", "zktest: ", "curatortest: ",
	"atomic: ", "barrier: ", "doublebarrier: ", "groupmember: ", "leader: ", "multilock: ", "mutex: ",
	"persistentnode: ", "queue: ", "rwlock: ", "semaphore: ", "sharedcount: ", "zk: "}

// checkOnePrefix fails when msg carries a package prefix other than at its start, or a
// first one other than pkg's (a message without any prefix passes).
func checkOnePrefix(t *testing.T, what, pkg, msg string) {
	t.Helper()
	for _, p := range prefixes {
		i := strings.Index(msg, p)
		for i > 0 && isLetter(msg[i-1]) { // "barrier: " in "doublebarrier: " is no prefix
			j := strings.Index(msg[i+1:], p)
			if j < 0 {
				i = -1
				break
			}
			i += 1 + j
		}
		if i < 0 {
			continue
		}
		if i > 0 {
			t.Errorf("%s: %q repeats a package prefix (%q inside)", what, msg, p)
		} else if p != pkg+": " && p != "zk: " {
			t.Errorf("%s: %q starts with %q, not its package's %q", what, msg, p, pkg+": ")
		}
	}
}

func isLetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }
