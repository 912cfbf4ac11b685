package mutex

// LocalWaiters returns how many goroutines wait in the Mutex's local queue; tests use it
// to sequence waiters without sleeping.
func (m *Mutex) LocalWaiters() int {
	m.lq.Lock()
	defer m.lq.Unlock()
	return len(m.waiters)
}
