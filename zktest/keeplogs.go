package zktest

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// KeepLogsEnv names the environment variable that makes NewServer and NewEnsemble keep
// their servers' logs after every test, not only after a failed one: set it to a directory
// (created if missing) and each test's logs go into a folder of their own under it.
const KeepLogsEnv = "ZKTEST_KEEP_LOGS"

// keepLogs copies every server.out under dir (one per member) into a new folder, before the
// directory is removed, when the test failed or KeepLogsEnv is set, and logs where it went:
// a member that misbehaved (an election that did not finish, a server that stopped serving)
// leaves its own account beside the test's failure.
func keepLogs(t testing.TB, dir string) {
	if dir == "" {
		return
	}
	root := os.Getenv(KeepLogsEnv)
	if !t.Failed() && root == "" {
		return
	}
	if root == "" {
		root = os.TempDir()
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Logf("zktest: keeping the servers' logs: %v", err)
		return
	}
	name := strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())
	to, err := os.MkdirTemp(root, "zktest-logs-"+name+"-")
	if err != nil {
		t.Logf("zktest: keeping the servers' logs: %v", err)
		return
	}
	kept := 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || (d.Name() != "server.out" && d.Name() != "zoo.cfg") {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil
		}
		dst := filepath.Join(to, rel)
		if copyFile(p, dst) == nil {
			kept++
		}
		return nil
	})
	t.Logf("zktest: %d server log and config files kept in %s", kept, to)
}

func copyFile(from, to string) error {
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
