package framework

// AddListenerUnbroken registers fn with no circuit breaker, even under
// WithCircuitBreaking: the tests' negative control.
func AddListenerUnbroken(c *Client, fn func(State)) (remove func()) { return c.addListener(fn) }
