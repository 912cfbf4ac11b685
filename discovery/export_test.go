package discovery

import "time"

// SetClock replaces the provider's clock (for the down-instance policy).
func SetClock[T any](p *ServiceProvider[T], now func() time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.now = now
}
