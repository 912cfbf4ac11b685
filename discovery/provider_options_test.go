package discovery_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
	"github.com/zoocurator/zoocurator/framework"
	"github.com/zoocurator/zoocurator/internal/leakcheck"
)

type zone struct{ Zone string }

// first is a Strategy of a user's own: the first instance.
type first[T any] struct{}

func (first[T]) Choose(in []*discovery.Instance[T]) *discovery.Instance[T] { return in[0] }

// The provider options need no type argument: the built-in strategies and the policy are
// not generic, and the typed ones infer it from their argument. A typed option of
// another instance type than the provider's is refused by NewProvider.
func TestProviderOptionsInferTypes(t *testing.T) {
	leakcheck.Check(t)
	c, err := framework.New("127.0.0.1:1")
	require.NoError(t, err)
	defer c.Close()
	d, err := discovery.New[zone](c, "/services")
	require.NoError(t, err)
	defer d.Close()
	for _, opts := range [][]discovery.ProviderOption{
		nil,
		{discovery.WithStrategy(discovery.RoundRobin())},
		{discovery.WithStrategy(discovery.Sticky(discovery.Random()))},
		{discovery.WithCustomStrategy(first[zone]{})},
		{discovery.WithCustomStrategy(discovery.StickyOf[zone](first[zone]{}))},
		{discovery.WithFilter(func(i *discovery.Instance[zone]) bool { return i.Payload.Zone == "a" })},
		{discovery.WithDownInstancePolicy(discovery.DownInstancePolicy{Timeout: 1, ErrorThreshold: 1})},
	} {
		p, err := discovery.NewProvider(d, "svc", opts...)
		require.NoError(t, err)
		require.NoError(t, p.Close())
	}
	for name, opt := range map[string]discovery.ProviderOption{
		"strategy of another type": discovery.WithCustomStrategy(first[string]{}),
		"filter of another type":   discovery.WithFilter(func(*discovery.Instance[string]) bool { return true }),
		"zero built-in strategy":   discovery.WithStrategy(discovery.BuiltinStrategy{}),
		"zero policy":              discovery.WithDownInstancePolicy(discovery.DownInstancePolicy{}),
		"nil filter":               discovery.WithFilter[zone](nil),
	} {
		_, err := discovery.NewProvider(d, "svc", opt)
		assert.ErrorIs(t, err, framework.ErrInvalidArgument, name)
	}
}
