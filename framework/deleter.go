package framework

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
)

// deleter is the guaranteed-delete worker: it keeps deleting the nodes handed to it until
// each is gone (deleted, or NoNode), or the client closes.
type deleter struct {
	c      *Client
	mu     sync.Mutex
	jobs   []deleteJob
	signal chan struct{}
	idle   chan struct{} // closed when no job is pending; replaced when one is added
}

// deleteJob deletes a node by its server path, or (prefix != "") every child of parent
// whose name starts with prefix: what a failed protected create may have left.
type deleteJob struct {
	path   string
	parent string
	prefix string
}

func newDeleter(c *Client) *deleter {
	idle := make(chan struct{})
	close(idle)
	return &deleter{c: c, signal: make(chan struct{}, 1), idle: idle}
}

func (d *deleter) add(j deleteJob) {
	d.mu.Lock()
	if isClosed(d.idle) {
		d.idle = make(chan struct{})
	}
	d.jobs = append(d.jobs, j)
	d.mu.Unlock()
	select {
	case d.signal <- struct{}{}:
	default:
	}
}

func (d *deleter) run() {
	defer d.c.wg.Done()
	backoff := 50 * time.Millisecond
	for {
		d.mu.Lock()
		jobs := d.jobs
		d.jobs = nil
		d.mu.Unlock()
		var failed []deleteJob
		for _, j := range jobs {
			if err := d.do(j); err != nil {
				d.c.opts.logger.Debug("guaranteed delete will retry", "component", "framework", "op", "delete", "path", j.path, "parent", j.parent, "err", err)
				failed = append(failed, j)
			}
		}
		d.mu.Lock()
		d.jobs = append(failed, d.jobs...)
		if len(d.jobs) == 0 {
			closeOnce(d.idle)
		}
		pending := len(d.jobs) > 0
		d.mu.Unlock()
		var wait <-chan time.Time
		if pending && len(failed) > 0 {
			wait = time.After(backoff)
			backoff = min(backoff*2, 2*time.Second)
		} else {
			backoff = 50 * time.Millisecond
		}
		if pending && len(failed) == 0 {
			continue
		}
		select {
		case <-d.c.closing:
			return
		case <-d.signal:
		case <-wait:
		}
	}
}

// do runs one job once. NoNode counts as done.
func (d *deleter) do(j deleteJob) error {
	ctx, cancel := context.WithTimeout(context.Background(), d.c.opts.connectionTimeout)
	defer cancel()
	if err := d.c.waitConnected(ctx); err != nil {
		return err
	}
	conn := d.c.conn.Load()
	if j.prefix == "" {
		_, err := call(d.c, ctx, "delete", func() (struct{}, error) { return struct{}{}, conn.Delete(j.path, -1) }, nil)
		if err == nil || errors.Is(err, zk.ErrNoNode) {
			return nil
		}
		return err
	}
	kids, err := call(d.c, ctx, "getChildren", func() ([]string, error) {
		k, _, err := conn.Children(j.parent)
		return k, err
	}, nil)
	if errors.Is(err, zk.ErrNoNode) {
		return nil
	}
	if err != nil {
		return err
	}
	for _, k := range kids {
		if strings.HasPrefix(k, j.prefix) {
			p := j.parent + "/" + k
			if j.parent == "/" {
				p = "/" + k
			}
			_, err := call(d.c, ctx, "delete", func() (struct{}, error) { return struct{}{}, conn.Delete(p, -1) }, nil)
			if err != nil && !errors.Is(err, zk.ErrNoNode) {
				return err
			}
		}
	}
	return nil
}

// WaitGuaranteedDeletes waits until every guaranteed delete handed to the background
// worker so far has finished, or ctx ends. Tests and orderly shutdowns use it.
func (c *Client) WaitGuaranteedDeletes(ctx context.Context) error {
	c.deleter.mu.Lock()
	idle := c.deleter.idle
	c.deleter.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-c.closing:
		return ErrClosed
	}
}
