package discovery

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zoocurator/zoocurator/framework"
)

// typeName names T in an error.
func typeName[T any]() string { return reflect.TypeFor[T]().String() }

// Strategy picks one instance out of those available (Curator's ProviderStrategy).
// Choose gets at least one instance, sorted by node name, and returns one of them.
// Implementations must be safe for concurrent use.
type Strategy[T any] interface {
	Choose(instances []*Instance[T]) *Instance[T]
}

// BuiltinStrategy is one of the library's strategies (RoundRobin, Random, Sticky), for
// providers of any instance type: give it to WithStrategy, no type argument needed. A
// provider gets its own instance of it (a round robin's turn is per provider).
type BuiltinStrategy struct {
	kind   builtinKind
	master *BuiltinStrategy // Sticky's
}

type builtinKind int

const (
	roundRobinKind builtinKind = iota + 1
	randomKind
	stickyKind
)

// RoundRobin is Curator's default strategy: each call takes the next instance.
func RoundRobin() BuiltinStrategy { return BuiltinStrategy{kind: roundRobinKind} }

// Random picks an instance at random.
func Random() BuiltinStrategy { return BuiltinStrategy{kind: randomKind} }

// Sticky keeps returning the instance it picked (by master) as long as that instance is
// available (same name, id and data), as Curator's StickyStrategy. StickyOf does the same
// over a Strategy of your own.
func Sticky(master BuiltinStrategy) BuiltinStrategy {
	return BuiltinStrategy{kind: stickyKind, master: &master}
}

// strategyOf makes the Strategy b stands for, for instances of T (nil for the zero
// BuiltinStrategy).
func strategyOf[T any](b BuiltinStrategy) Strategy[T] {
	switch b.kind {
	case roundRobinKind:
		return &roundRobin[T]{}
	case randomKind:
		return random[T]{}
	case stickyKind:
		if b.master == nil {
			return nil
		}
		if m := strategyOf[T](*b.master); m != nil {
			return StickyOf(m)
		}
	}
	return nil
}

type roundRobin[T any] struct{ next atomic.Uint64 }

// Choose takes the next instance in turn.
func (s *roundRobin[T]) Choose(in []*Instance[T]) *Instance[T] {
	return in[(s.next.Add(1)-1)%uint64(len(in))]
}

type random[T any] struct{}

// Choose takes an instance at random.
func (random[T]) Choose(in []*Instance[T]) *Instance[T] { return in[rand.IntN(len(in))] }

// StickyOf returns a strategy that keeps returning the instance master picked as long as
// that instance is available (same name, id and data): Sticky over a Strategy of your
// own.
func StickyOf[T any](master Strategy[T]) Strategy[T] { return &sticky[T]{master: master} }

type sticky[T any] struct {
	master Strategy[T]
	mu     sync.Mutex
	// The instance chosen, as it was when chosen: its name, id and encoding (not the
	// pointer handed out, which the caller may change).
	name, id string
	want     []byte
	chosen   bool
}

// Choose keeps the instance it chose while it is there.
func (s *sticky[T]) Choose(in []*Instance[T]) *Instance[T] {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.chosen {
		for _, i := range in {
			if i.Name == s.name && i.ID == s.id {
				if got, _ := i.Marshal(); string(got) == string(s.want) {
					return i
				}
			}
		}
	}
	ours := s.master.Choose(in)
	s.chosen = ours != nil
	if ours != nil {
		s.name, s.id = ours.Name, ours.ID
		s.want, _ = ours.Marshal()
	}
	return ours
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

// ProviderOption configures a ServiceProvider. It is not generic: the instance type is
// the ServiceDiscovery's, given to NewProvider, and the options that carry a type
// (WithCustomStrategy, WithFilter) infer it from their argument. Options are plain
// values; NewProvider reports an invalid one (framework.ErrInvalidArgument).
type ProviderOption func(*providerConfig)

// providerConfig is what the options set, before NewProvider gives it the provider's type.
type providerConfig struct {
	builtin  *BuiltinStrategy
	strategy any   // a Strategy[T] (WithCustomStrategy)
	filters  []any // func(*Instance[T]) bool
	policy   DownInstancePolicy
}

type providerOpts[T any] struct {
	strategy Strategy[T]
	filters  []func(*Instance[T]) bool
	policy   DownInstancePolicy
}

// WithStrategy sets how GetInstance picks: RoundRobin(), Random() or Sticky(...). The
// default is RoundRobin().
func WithStrategy(s BuiltinStrategy) ProviderOption {
	return func(o *providerConfig) { o.builtin, o.strategy = &s, nil }
}

// WithCustomStrategy sets a Strategy of your own (Curator's ProviderStrategy); its type
// argument is inferred from s and must be the provider's instance type. The default is
// RoundRobin().
func WithCustomStrategy[T any](s Strategy[T]) ProviderOption {
	return func(o *providerConfig) { o.builtin, o.strategy = nil, s }
}

// WithFilter adds a filter: only instances for which keep returns true are handed out.
// Disabled instances and those the down-instance policy took out are always left out.
// Its type argument is inferred from keep and must be the provider's instance type. The
// default is no filter.
func WithFilter[T any](keep func(*Instance[T]) bool) ProviderOption {
	return func(o *providerConfig) { o.filters = append(o.filters, keep) }
}

// WithDownInstancePolicy sets the down-instance policy. The default is
// DefaultDownInstancePolicy.
func WithDownInstancePolicy(p DownInstancePolicy) ProviderOption {
	return func(o *providerConfig) { o.policy = p }
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
func NewProvider[T any](d *ServiceDiscovery[T], name string, opts ...ProviderOption) (*ServiceProvider[T], error) {
	cfg := providerConfig{policy: DefaultDownInstancePolicy}
	for _, opt := range opts {
		if opt != nil {
			opt(&cfg)
		}
	}
	o := providerOpts[T]{policy: cfg.policy}
	switch {
	case cfg.strategy != nil:
		s, ok := cfg.strategy.(Strategy[T])
		if !ok {
			return nil, fmt.Errorf("discovery: %w: strategy %T is not a Strategy[%s]", framework.ErrInvalidArgument, cfg.strategy, typeName[T]())
		}
		o.strategy = s
	case cfg.builtin != nil:
		if o.strategy = strategyOf[T](*cfg.builtin); o.strategy == nil {
			return nil, fmt.Errorf("discovery: %w: the zero BuiltinStrategy", framework.ErrInvalidArgument)
		}
	default:
		o.strategy = &roundRobin[T]{}
	}
	if o.policy.ErrorThreshold < 1 || o.policy.Timeout <= 0 {
		return nil, fmt.Errorf("discovery: %w: down-instance policy %+v: the threshold must be at least 1 and the timeout positive", framework.ErrInvalidArgument, o.policy)
	}
	for i, f := range cfg.filters {
		keep, ok := f.(func(*Instance[T]) bool)
		if !ok {
			return nil, fmt.Errorf("discovery: %w: filter %d is a %T, not a func(*Instance[%s]) bool", framework.ErrInvalidArgument, i, f, typeName[T]())
		}
		if keep == nil {
			return nil, fmt.Errorf("discovery: %w: nil filter", framework.ErrInvalidArgument)
		}
		o.filters = append(o.filters, keep)
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
// filters and not taken out by the down-instance policy. It returns ErrNotStarted until
// the cache's first read of the registry is done, and ErrStale while the cache is stale.
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

// noInstance says why no instance is handed out: none registered, or how many are
// disabled, marked down by NoteError or filtered out, so that a caller can tell a service
// that is gone from one the policy holds back.
func (p *ServiceProvider[T]) noInstance() error {
	all := p.cache.Instances()
	if len(all) == 0 {
		return fmt.Errorf("%w: %s: none registered", ErrNoInstance, p.cache.name)
	}
	var disabled, down, filtered int
	for _, i := range all {
		switch {
		case !i.Enabled:
			disabled++
		case !p.up(i):
			down++
		case !p.kept(i):
			filtered++
		}
	}
	return fmt.Errorf("%w: %s: %d registered (%d disabled, %d marked down after errors, %d filtered out)",
		ErrNoInstance, p.cache.name, len(all), disabled, down, filtered)
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
// ErrNotStarted before the cache's first read, ErrStale while the cache is stale.
func (p *ServiceProvider[T]) GetInstance() (*Instance[T], error) {
	in, err := p.GetAllInstances()
	if err != nil {
		return nil, err
	}
	if len(in) == 0 {
		return nil, p.noInstance()
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
