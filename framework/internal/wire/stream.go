package wire

import "sync"

// stream is a Client's ordered stream: the notices for its OnEvent and the replies of its
// requests, in the order the servers sent them (and the Client's own state changes
// among them), delivered one at a time on the stream's goroutine. A reply with nothing
// before it is delivered at once on the reading goroutine, so that most replies cost no
// hand-over; one behind a notice waits for OnEvent to have returned for that notice.
type stream struct {
	fn func(Notice)

	mu     sync.Mutex
	q      []item
	busy   bool // the goroutine is delivering an item taken from q
	closed bool // no more items come: the goroutine ends once q is empty
	wake   chan struct{}
	done   chan struct{}
}

// item is a notice, or a reply for its call.
type item struct {
	n  Notice
	cl *call
	r  reply
}

func newStream(fn func(Notice)) *stream {
	s := &stream{fn: fn, wake: make(chan struct{}, 1), done: make(chan struct{})}
	go s.run()
	return s
}

// notice queues n.
func (s *stream) notice(n Notice) {
	s.mu.Lock()
	s.q = append(s.q, item{n: n})
	s.mu.Unlock()
	s.signal()
}

// reply runs cl's hook for a reply that came, then delivers r after every item queued
// before it (and the hook's notices).
func (s *stream) reply(cl *call, r reply) {
	var extra []Notice
	if cl.hook != nil && r.err == nil {
		extra = cl.hook(&r)
	}
	s.mu.Lock()
	if len(s.q) == 0 && !s.busy && len(extra) == 0 {
		cl.done <- r // buffered: never blocks
		s.mu.Unlock()
		return
	}
	for _, n := range extra {
		s.q = append(s.q, item{n: n})
	}
	s.q = append(s.q, item{cl: cl, r: r})
	s.mu.Unlock()
	s.signal()
}

func (s *stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// close ends the stream once the items queued so far are delivered, and waits for that.
func (s *stream) close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.signal()
	<-s.done
}

func (s *stream) run() {
	defer close(s.done)
	for {
		<-s.wake
		for {
			s.mu.Lock()
			if len(s.q) == 0 {
				s.busy = false
				closed := s.closed
				s.mu.Unlock()
				if closed {
					return
				}
				break
			}
			it := s.q[0]
			s.q[0] = item{}
			s.q = s.q[1:]
			s.busy = true
			s.mu.Unlock()
			if it.cl != nil {
				it.cl.done <- it.r
			} else if s.fn != nil {
				s.fn(it.n)
			}
		}
	}
}
