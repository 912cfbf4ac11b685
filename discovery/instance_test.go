package discovery_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/discovery"
)

// details is a typed payload that Java reads as DiscoveryDriver$Details (the Java side
// of the interop tests).
type details struct {
	Description string            `json:"description"`
	Metadata    map[string]string `json:"metadata"`
}

func (details) JavaClass() string { return "DiscoveryDriver$Details" }

func TestMarshalAsCurator(t *testing.T) {
	spec := discovery.MustParseURISpec("{scheme}://{address}:{port}/x")
	inst := &discovery.Instance[details]{
		Name: "orders", ID: "id-1", Address: "10.0.0.7", Port: 8080,
		Payload:             details{Description: "d", Metadata: map[string]string{"zone": "eu"}},
		RegistrationTimeUTC: 1732350000123, ServiceType: discovery.Dynamic, URISpec: spec, Enabled: true,
	}
	b, err := inst.Marshal()
	require.NoError(t, err)
	// Field order, nulls, the payload's @class first and the uriSpec's parts as Curator
	// 5.4's JsonInstanceSerializer writes them by default (no "enabled").
	assert.Equal(t, `{"name":"orders","id":"id-1","address":"10.0.0.7","port":8080,"sslPort":null,`+
		`"payload":{"@class":"DiscoveryDriver$Details","description":"d","metadata":{"zone":"eu"}},`+
		`"registrationTimeUTC":1732350000123,"serviceType":"DYNAMIC","uriSpec":{"parts":[`+
		`{"value":"scheme","variable":true},{"value":"://","variable":false},{"value":"address","variable":true},`+
		`{"value":":","variable":false},{"value":"port","variable":true},{"value":"/x","variable":false}]}}`, string(b))

	back, err := discovery.Unmarshal[details](b)
	require.NoError(t, err)
	assert.Equal(t, inst, back)

	inst.Enabled = false
	b, err = inst.Marshal()
	require.NoError(t, err)
	assert.Contains(t, string(b), `"uriSpec":{"parts":`)
	assert.Regexp(t, `,"enabled":false}$`, string(b))
	back, err = discovery.Unmarshal[details](b)
	require.NoError(t, err)
	assert.False(t, back.Enabled)
}

// Spring Cloud Zookeeper registers its services with Curator's discovery and a
// ZookeeperInstance payload, written with its class name.
func TestUnmarshalSpringCloud(t *testing.T) {
	const node = `{"name":"billing","id":"5b3c0a92-1f3b-4f0e-9a55-5e6c2f1d8b01","address":"192.168.1.20",` +
		`"port":8081,"sslPort":null,"payload":{"@class":"org.springframework.cloud.zookeeper.discovery.ZookeeperInstance",` +
		`"id":"billing","name":"billing","metadata":{"instance_status":"UP","version":"2"}},` +
		`"registrationTimeUTC":1700000000000,"serviceType":"DYNAMIC","uriSpec":{"parts":[` +
		`{"value":"scheme","variable":true},{"value":"://","variable":false},{"value":"address","variable":true},` +
		`{"value":":","variable":false},{"value":"port","variable":true}]}}`
	type zkInstance struct {
		ID       string            `json:"id"`
		Name     string            `json:"name"`
		Metadata map[string]string `json:"metadata"`
	}
	inst, err := discovery.Unmarshal[zkInstance]([]byte(node))
	require.NoError(t, err)
	assert.Equal(t, zkInstance{ID: "billing", Name: "billing", Metadata: map[string]string{"instance_status": "UP", "version": "2"}}, inst.Payload)
	assert.Equal(t, "http://192.168.1.20:8081", inst.BuildURI(nil))
	assert.True(t, inst.Enabled, "a missing enabled flag reads as true")
	assert.Equal(t, discovery.Dynamic, inst.ServiceType)

	m, err := discovery.Unmarshal[map[string]any]([]byte(node))
	require.NoError(t, err)
	assert.NotContains(t, m.Payload, "@class", "a map payload does not keep the Java class name")
	assert.Equal(t, "billing", m.Payload["id"])

	raw, err := discovery.Unmarshal[json.RawMessage]([]byte(node))
	require.NoError(t, err)
	assert.Contains(t, string(raw.Payload), "@class", "a raw payload is the payload as written")

	// Jackson's wrapper around a typed list, and a plain string payload.
	l, err := discovery.Unmarshal[[]string]([]byte(`{"name":"a","id":"b","payload":["java.util.ArrayList",["x","y"]]}`))
	require.NoError(t, err)
	assert.Equal(t, []string{"x", "y"}, l.Payload)
	s, err := discovery.Unmarshal[string]([]byte(`{"name":"a","id":"b","payload":"text"}`))
	require.NoError(t, err)
	assert.Equal(t, "text", s.Payload)
}

func TestUnmarshalNotAnInstance(t *testing.T) {
	for _, data := range []string{``, `hello`, `[]`, `{}`, `{"name":"a"}`, `{"name":"a","id":""}`,
		`{"name":"a","id":"b","serviceType":"SOMETIMES"}`, `{"name":"a","id":"b","port":"x"}`,
		`{"name":"a","id":"b"} trailing`, `{"name":"a","id":"b","payload":{"description":5}}`} {
		_, err := discovery.Unmarshal[details]([]byte(data))
		assert.ErrorIs(t, err, discovery.ErrNotInstance, "%q", data)
	}
}

func TestURISpec(t *testing.T) {
	inst, err := discovery.NewInstance("svc", "p", discovery.WithID("i1"), discovery.WithAddress("h"),
		discovery.WithPort(80), discovery.WithRegistrationTime(time.UnixMilli(42)), discovery.WithServiceType(discovery.Static))
	require.NoError(t, err)
	ssl, err := discovery.NewInstance("svc", "p", discovery.WithID("i2"), discovery.WithAddress("h"),
		discovery.WithPort(80), discovery.WithSSLPort(443))
	require.NoError(t, err)
	for _, tc := range []struct {
		tmpl string
		inst discovery.InstanceFields
		vars map[string]string
		want string
	}{
		{"{scheme}://{address}:{port}", inst, nil, "http://h:80"},
		{"{scheme}://{address}:{ssl-port}", ssl, nil, "https://h:443"},
		{"{ name }/{id}/{registration-time-utc}/{service-type}", inst, nil, "svc/i1/42/static"},
		{"{[}x{]} {unknown}!", inst, nil, "{x} !"},
		{"{scheme}://{address}/{path}", inst, map[string]string{"path": "p", "scheme": "ftp"}, "ftp://h/p"},
		{"{scheme}:{port}", nil, nil, "http:"},
		{"", inst, nil, ""},
	} {
		spec, err := discovery.ParseURISpec(tc.tmpl)
		require.NoError(t, err, tc.tmpl)
		assert.Equal(t, tc.want, spec.Build(tc.inst, tc.vars), tc.tmpl)
	}
	for _, bad := range []string{"{a{b}}", "a}", "{a", "{"} {
		_, err := discovery.ParseURISpec(bad)
		assert.ErrorIs(t, err, discovery.ErrInvalidURISpec, bad)
	}
	s := discovery.MustParseURISpec("{scheme}://x")
	assert.Equal(t, "{scheme}://x", s.String())
	assert.Panics(t, func() { discovery.MustParseURISpec("{") })
}

func TestNewInstanceDefaultsAndBadInput(t *testing.T) {
	inst, err := discovery.NewInstance("svc", 1)
	require.NoError(t, err)
	assert.Regexp(t, `^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[0-9a-f]{4}-[0-9a-f]{12}$`, inst.ID)
	assert.Equal(t, discovery.LocalAddress(), inst.Address)
	assert.Equal(t, discovery.Dynamic, inst.ServiceType)
	assert.True(t, inst.Enabled)
	assert.WithinDuration(t, time.Now(), inst.RegistrationTime(), time.Minute)

	for _, name := range []string{"", "a/b", ".", "..", "a\x00b", "a\x01", "\uFFF0"} {
		_, err := discovery.NewInstance(name, 1)
		assert.ErrorIs(t, err, discovery.ErrInvalidName, "name %q", name)
		_, err = discovery.NewInstance("svc", 1, discovery.WithID(name))
		if name != "" { // "" is the default: a UUID
			assert.ErrorIs(t, err, discovery.ErrInvalidName, "id %q", name)
		}
	}
	_, err = discovery.NewInstance("svc", 1, discovery.WithPort(70000))
	assert.ErrorIs(t, err, discovery.ErrInvalidInstance)
	_, err = discovery.NewInstance("svc", 1, discovery.WithServiceType("SOMETIMES"))
	assert.ErrorIs(t, err, discovery.ErrInvalidInstance)
	_, err = discovery.NewInstance("svc", 1, discovery.WithURISpec("{oops"))
	assert.ErrorIs(t, err, discovery.ErrInvalidInstance)
	assert.ErrorIs(t, err, discovery.ErrInvalidURISpec)

	ch, err := discovery.NewInstance("svc", make(chan int))
	require.NoError(t, err)
	_, err = ch.Marshal()
	assert.ErrorIs(t, err, discovery.ErrInvalidInstance, "a payload that does not marshal")
	var ue *json.UnsupportedTypeError
	assert.True(t, errors.As(err, &ue))
}
