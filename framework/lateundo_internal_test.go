package framework

import "testing"

func TestSequenceOf(t *testing.T) {
	for _, tc := range []struct {
		p  string
		n  int64
		ok bool
	}{
		{"/a/n-0000000000", 0, true},
		{"/a/n-0000000042", 42, true},
		{"/a/0000000007", 7, true},
		{"/a/n-2147483648", 2147483648, true}, // a wrapped counter's "-2147483648": read as positive
		{"/a/n", 0, false},
		{"/a/n-00000000x1", 0, false},
		{"/a/n-+000000001", 0, false},
	} {
		n, ok := sequenceOf(tc.p)
		if ok != tc.ok || (ok && n != tc.n) {
			t.Errorf("sequenceOf(%q) = %d, %v; want %d, %v", tc.p, n, ok, tc.n, tc.ok)
		}
	}
}
