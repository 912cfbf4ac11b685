package leader

import (
	"bytes"
	"runtime"
	"strconv"
)

// goid returns the calling goroutine's id (from its stack header, "goroutine N [...").
// Close uses it only to tell whether it was called from the latch's listener goroutine or
// the selector's own goroutine, which it must not wait for; 0 if unknown.
func goid() int64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	b = bytes.TrimPrefix(b, []byte("goroutine "))
	if i := bytes.IndexByte(b, ' '); i > 0 {
		if id, err := strconv.ParseInt(string(b[:i]), 10, 64); err == nil {
			return id
		}
	}
	return 0
}
