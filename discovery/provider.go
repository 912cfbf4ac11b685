package discovery

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zoocurator/zoocurator/framework"
)

// Strategy picks one instance out of those available (Curator's ProviderStrategy).
// Choose gets at least one instance, sorted by node name, and returns one of them.
// Implementations must be safe for concurrent use.
type Strategy[T any] interface {
	Choose(instances []*Instance[T]) *Instance[T]
}

// RoundRobin returns Curator's default strategy: each call takes the next instance.
func RoundRobin[T any]() Strategy[T] { return &roundRobin[T]{} }

type roundRobin[T any] struct{ next atomic.Uint64 }

// Choose takes the next instance in turn.
func (s *roundRobin[T]) Choose(in []*Instance[T]) *Instance[T] {
	return in[(s.next.Add(1)-1)%uint64(len(in))]
}

// Random returns a strategy that picks an instance at random.
func Random[T any]() Strategy[T] { return random[T]{} }

type random[T any] struct{}

// Choose takes an instance at random.
func (random[T]) Choose(in []*Instance[T]) *Instance[T] { return in[rand.IntN(len(in))] }

// Sticky returns a strategy that keeps returning the instance it picked (by master) as
// long as that instance is available (same name, id and data), as Curator's
// StickyStrategy.
func Sticky[T any](master Strategy[T]) Strategy[T] { return &sticky[T]{master: master} }

type sticky[T any] struct {
	master Strategy[T]
	mu     sync.Mutex
	ours   *Instance[T]
}

// Choose keeps the instance it chose while it is there.
func (s *sticky[T]) Choose(in []*Instance[T]) *Instance[T] {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ours != nil {
		want, _ := s.ours.Marshal()
		for _, i := range in {
			if i.Name == s.ours.Name && i.ID == s.ours.ID {
				if got, _ := i.Marshal(); string(got) == string(want) {
					return i
				}
			}
		}
	}
	s.ours = s.master.Choose(in)
	return s.ours
}

// DownInstancePolicy says when NoteError takes an instance out (Curator's
// DownInstancePolicy): once it has had ErrorThreshold errors, for Timeout after its
// first error.
type DownInstancePolicy struct {
	Timeout        time.Duration
	ErrorThreshold int
}

// DefaultDownInstancePolicy is Curator's default: 2 errors, 30 s.
var DefaultDownInstancePolicy = DownInstancePolicy{Timeout: 30 * time.Second, ErrorThreshold: 2}

// ProviderOption configures a ServiceProvider.
type ProviderOption[T any] func(*providerOpts[T])

type providerOpts[T any] struct {
	strategy Strategy[T]
	filters  []func(*Instance[T]) bool
	policy   DownInstancePolicy
}

// WithStrategy sets how GetInstance picks. The default is RoundRobin.
func WithStrategy[T any](s Strategy[T]) ProviderOption[T] {
	return func(o *providerOpts[T]) { o.strategy = s }
}

// WithFilter adds a filter: only instances for which keep returns true are handed out.
// Disabled instances and those the down-instance policy took out are always left out.
// The default is no filter.
func WithFilter[T any](keep func(*Instance[T]) bool) ProviderOption[T] {
	return func(o *providerOpts[T]) { o.filters = append(o.filters, keep) }
}

// WithDownInstancePolicy sets the down-instance policy. The default is
// DefaultDownInstancePolicy.
func WithDownInstancePolicy[T any](p DownInstancePolicy) ProviderOption[T] {
	return func(o *providerOpts[T]) { o.policy = p }
}

// ServiceProvider hands out instances of one service from a ServiceCache of its own,
// by a strategy (Curator's ServiceProvider). A read costs no request. A
// ServiceProvider is safe for concurrent use.
type ServiceProvider[T any] struct {
	cache *ServiceCache[T]
	o     providerOpts[T]
	now   func() time.Time

	mu   sync.Mutex
	down map[string]*downStatus // by name/id
}

type downStatus struct {
	start  time.Time
	errors int
}

// NewProvider returns a provider of instances of the service name. Call Start.
func NewProvider[T any](d *ServiceDiscovery[T], name string, opts ...ProviderOption[T]) (*ServiceProvider[T], error) {
	o := providerOpts[T]{policy: DefaultDownInstancePolicy}
	for _, opt := range opts {
		if opt != nil {
			opt(&o)
		}
	}
	if o.strategy == nil {
		o.strategy = RoundRobin[T]()
	}
	if o.policy.ErrorThreshold < 1 || o.policy.Timeout <= 0 {
		return nil, fmt.Errorf("discovery: %w: down-instance policy %+v: the threshold must be at least 1 and the timeout positive", framework.ErrInvalidArgument, o.policy)
	}
	for _, f := range o.filters {
		if f == nil {
			return nil, fmt.Errorf("discovery: %w: nil filter", framework.ErrInvalidArgument)
		}
	}
	c, err := d.NewCache(name)
	if err != nil {
		return nil, err
	}
	return &ServiceProvider[T]{cache: c, o: o, now: time.Now, down: map[string]*downStatus{}}, nil
}

// Start starts the provider's cache (see ServiceCache.Start).
func (p *ServiceProvider[T]) Start(ctx context.Context) error { return p.cache.Start(ctx) }

// Cache returns the provider's cache, for its listeners.
func (p *ServiceProvider[T]) Cache() *ServiceCache[T] { return p.cache }

// GetAllInstances returns the instances that may be handed out: enabled, kept by the
// filters and not taken out by the down-instance policy. It returns ErrStale while the
// cache is stale.
func (p *ServiceProvider[T]) GetAllInstances() ([]*Instance[T], error) {
	if err := p.cache.state(); err != nil {
		return nil, err
	}
	all := p.cache.Instances()
	out := all[:0]
	for _, i := range all {
		if i.Enabled && p.up(i) && p.kept(i) {
			out = append(out, i)
		}
	}
	return out, nil
}

func (p *ServiceProvider[T]) kept(i *Instance[T]) bool {
	for _, f := range p.o.filters {
		if !f(i) {
			return false
		}
	}
	return true
}

// GetInstance returns one instance by the strategy, ErrNoInstance when there is none,
// ErrStale while the cache is stale.
func (p *ServiceProvider[T]) GetInstance() (*Instance[T], error) {
	in, err := p.GetAllInstances()
	if err != nil {
		return nil, err
	}
	if len(in) == 0 {
		return nil, fmt.Errorf("%w: %s", ErrNoInstance, p.cache.name)
	}
	return p.o.strategy.Choose(in), nil
}

// NoteError records that inst failed (Curator's noteError): after the policy's
// threshold of errors it is not handed out until the policy's timeout after its first
// error.
func (p *ServiceProvider[T]) NoteError(inst *Instance[T]) {
	if inst == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.purge()
	k := inst.Name + "/" + inst.ID
	s := p.down[k]
	if s == nil {
		s = &downStatus{start: p.now()}
		p.down[k] = s
	}
	s.errors++
}

func (p *ServiceProvider[T]) up(inst *Instance[T]) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.purge()
	s := p.down[inst.Name+"/"+inst.ID]
	return s == nil || s.errors < p.o.policy.ErrorThreshold
}

func (p *ServiceProvider[T]) purge() {
	now := p.now()
	for k, s := range p.down {
		if now.Sub(s.start) >= p.o.policy.Timeout {
			delete(p.down, k)
		}
	}
}

// Close closes the provider's cache. It may be called more than once.
func (p *ServiceProvider[T]) Close() error { return p.cache.Close() }
