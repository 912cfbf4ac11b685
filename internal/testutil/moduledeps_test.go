package testutil_test

import (
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// allowedModules are the modules a user of the library's packages downloads: what the
// packages import, and what their tests import (go mod tidy fetches both). A Docker
// client, testcontainers or OpenTelemetry here would cost every user of a lock a hundred
// megabytes; those belong in nested modules (zktest/zkcontainer).
var allowedModules = map[string]bool{
	"github.com/zoocurator/zoocurator": true,
	"github.com/go-zookeeper/zk":       true,
	"github.com/cenkalti/backoff/v4":   true,
	"github.com/stretchr/testify":      true,
	"github.com/davecgh/go-spew":       true,
	"github.com/pmezard/go-difflib":    true,
	"go.yaml.in/yaml/v3":               true,
	"gopkg.in/yaml.v3":                 true,
}

// TestUserPaysOnlyForWhatTheyImport lists the modules behind every package a user
// imports (framework, retry, cache, the recipes, zktest) and behind their tests, and
// fails on any module outside allowedModules.
func TestUserPaysOnlyForWhatTheyImport(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go command is needed to list the modules: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-deps", "-test", "-f", "{{with .Module}}{{.Path}}{{end}}",
		"./framework/...", "./retry/...", "./cache/...", "./discovery/...", "./recipes/...", "./zktest/...")
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	extra := map[string]bool{}
	for _, m := range strings.Fields(string(out)) {
		if !allowedModules[m] {
			extra[m] = true
		}
	}
	var list []string
	for m := range extra {
		list = append(list, m)
	}
	sort.Strings(list)
	if len(list) > 0 {
		t.Errorf("a user of the library's packages would download %d more modules: %s", len(list), strings.Join(list, " "))
	}
}
