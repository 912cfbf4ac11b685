package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/zoocurator/zoocurator/examples/internal/demotest"
)

func TestRun(t *testing.T) {
	out := demotest.Run(t, run, 30*time.Second)
	want := "== readers together ==\n" +
		"3 readers hold the read lock at the same time\n" +
		"== writers alone ==\n" +
		"the writer queues behind the readers\n" +
		"a new reader does not overtake the queued writer: rwlock: locked\n" +
		"the readers released; the writer holds the lock alone\n" +
		"a reader cannot get in meanwhile: rwlock: locked\n" +
		"== downgrade ==\n" +
		"the writer takes the read lock, then releases the write lock\n" +
		"another reader joins the downgraded holder\n" +
		"a second writer waits until the downgraded holder is done reading\n" +
		"upgrading back to the write lock is refused: rwlock: cannot upgrade a read lock to a write lock\n" +
		"the read lock released; the second writer holds the lock\n"
	assert.Equal(t, want, out)
}
