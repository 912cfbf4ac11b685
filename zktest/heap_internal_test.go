package zktest

import (
	"testing"
)

// TestServerHeap: the servers' heap is 128m unless ZKTEST_SERVER_HEAP names another size;
// a value that is not a size is an error, not a JVM that fails to start.
func TestServerHeap(t *testing.T) {
	for _, c := range []struct {
		env, want string
		bad       bool
	}{
		{"", "128m", false},
		{"1g", "1g", false},
		{"512M", "512M", false},
		{"2048", "2048", false},
		{"1 g", "", true},
		{"-1g", "", true},
		{"0", "", true},
		{"1g -Xss1m", "", true},
	} {
		t.Setenv(ServerHeapEnv, c.env)
		got, err := serverHeap()
		if c.bad {
			if err == nil {
				t.Errorf("%q: no error (got %q)", c.env, got)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%q: got %q, %v; want %q", c.env, got, err, c.want)
		}
	}
}
