package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"strings"
	"time"

	"github.com/zoocurator/zoocurator/framework"
)

// ServiceType says how an instance's node lives (Curator's ServiceType).
type ServiceType string

// The service types, spelled as Curator's enum constants (they are the JSON values).
const (
	// Dynamic instances have an ephemeral node: gone with the registering session.
	Dynamic ServiceType = "DYNAMIC"
	// Static instances have a persistent node.
	Static ServiceType = "STATIC"
	// Permanent instances have a persistent node.
	Permanent ServiceType = "PERMANENT"
	// DynamicSequential instances have an ephemeral-sequential node: its name is the id
	// followed by a 10-digit sequence number.
	DynamicSequential ServiceType = "DYNAMIC_SEQUENTIAL"
)

// Valid reports whether t is one of the four service types.
func (t ServiceType) Valid() bool {
	switch t {
	case Dynamic, Static, Permanent, DynamicSequential:
		return true
	}
	return false
}

// IsDynamic reports whether instances of this type go with their session.
func (t ServiceType) IsDynamic() bool { return t == Dynamic || t == DynamicSequential }

func (t ServiceType) createMode() framework.CreateMode {
	switch t {
	case Dynamic:
		return framework.Ephemeral
	case DynamicSequential:
		return framework.EphemeralSequential
	}
	return framework.Persistent
}

// JavaTyped is implemented by payload types that Java reads as a class of its own.
// Curator stores the payload with Jackson's class-name type information (an "@class"
// property first in the payload object, as Spring Cloud Zookeeper's ZookeeperInstance
// payload has): a payload whose type has a JavaClass method is written with
// "@class": JavaClass() first, so that a Java reader configured with that payload class
// accepts it. Without it a JSON object payload reads in Java as a Map.
type JavaTyped interface {
	JavaClass() string
}

// InstanceFields is implemented by every *Instance[T]: what URISpec.Build reads,
// whatever the payload type.
type InstanceFields interface {
	instanceFields() *fieldsView
}

type fieldsView struct {
	Name, ID, Address   string
	Port, SSLPort       int
	RegistrationTimeUTC int64
	ServiceType         ServiceType
}

// Instance is one instance of a service, with Curator's fields (ServiceInstance).
// T is the payload's type: a struct, a map, json.RawMessage (the payload as written),
// or any. Port, SSLPort 0 and Address "" stand for Java's null (absent).
//
// An Instance is a plain value; the ServiceDiscovery that registers one keeps its own
// copy.
type Instance[T any] struct {
	Name                string      // the service's name: the node under the base path
	ID                  string      // unique among the service's instances: the node's name
	Address             string      // host name or IP address
	Port                int         // 0: none
	SSLPort             int         // 0: none
	Payload             T           // anything JSON can carry
	RegistrationTimeUTC int64       // milliseconds since the Unix epoch
	ServiceType         ServiceType // how the node lives
	URISpec             *URISpec    // nil: none
	Enabled             bool        // Curator's enabled flag (true unless set otherwise)
}

func (i *Instance[T]) instanceFields() *fieldsView {
	if i == nil {
		return nil // Build then builds as without an instance
	}
	return &fieldsView{Name: i.Name, ID: i.ID, Address: i.Address, Port: i.Port, SSLPort: i.SSLPort,
		RegistrationTimeUTC: i.RegistrationTimeUTC, ServiceType: i.ServiceType}
}

// RegistrationTime returns RegistrationTimeUTC as a time.Time.
func (i *Instance[T]) RegistrationTime() time.Time { return time.UnixMilli(i.RegistrationTimeUTC) }

// BuildURI builds the instance's URI from its URISpec (Curator's buildUriSpec): "" when
// it has none. vars override the instance's own variables.
func (i *Instance[T]) BuildURI(vars map[string]string) string {
	return i.URISpec.Build(i, vars)
}

// InstanceOption sets a field of a new Instance.
type InstanceOption func(*instanceOpts)

type instanceOpts struct {
	id, address   string
	addressSet    bool
	port, sslPort int
	regTime       time.Time
	serviceType   ServiceType
	uriSpec       *URISpec
	uriSpecErr    error
	enabled       bool
}

// WithID sets the instance's id. The default is a random UUID.
func WithID(id string) InstanceOption { return func(o *instanceOpts) { o.id = id } }

// WithAddress sets the address. The default is the first non-loopback address of this
// host's network interfaces (as Curator's builder), or none when there is none.
func WithAddress(a string) InstanceOption {
	return func(o *instanceOpts) { o.address, o.addressSet = a, true }
}

// WithPort sets the port (1–65535). The default is none.
func WithPort(p int) InstanceOption { return func(o *instanceOpts) { o.port = p } }

// WithSSLPort sets the SSL port (1–65535). The default is none.
func WithSSLPort(p int) InstanceOption { return func(o *instanceOpts) { o.sslPort = p } }

// WithRegistrationTime sets the registration time. The default is now.
func WithRegistrationTime(t time.Time) InstanceOption {
	return func(o *instanceOpts) { o.regTime = t }
}

// WithServiceType sets the service type. The default is Dynamic.
func WithServiceType(t ServiceType) InstanceOption {
	return func(o *instanceOpts) { o.serviceType = t }
}

// WithURISpec sets the URI template, e.g. "{scheme}://{address}:{port}". The default
// is none.
func WithURISpec(template string) InstanceOption {
	return func(o *instanceOpts) { o.uriSpec, o.uriSpecErr = ParseURISpec(template) }
}

// WithEnabled sets the enabled flag. The default is true.
func WithEnabled(on bool) InstanceOption { return func(o *instanceOpts) { o.enabled = on } }

// NewInstance returns an instance of the service name with the given payload, with
// Curator's builder defaults for what the options do not set: a random UUID id, this
// host's first non-loopback address, the registration time now, type Dynamic, enabled.
// A bad name or id returns ErrInvalidName, a bad port or template ErrInvalidInstance.
func NewInstance[T any](name string, payload T, opts ...InstanceOption) (*Instance[T], error) {
	o := instanceOpts{serviceType: Dynamic, enabled: true}
	for _, opt := range opts {
		opt(&o)
	}
	if o.uriSpecErr != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidInstance, o.uriSpecErr)
	}
	if o.id == "" {
		o.id = newUUID()
	}
	if !o.addressSet {
		o.address = LocalAddress()
	}
	if o.regTime.IsZero() {
		o.regTime = time.Now()
	}
	inst := &Instance[T]{
		Name: name, ID: o.id, Address: o.address, Port: o.port, SSLPort: o.sslPort,
		Payload: payload, RegistrationTimeUTC: o.regTime.UnixMilli(), ServiceType: o.serviceType,
		URISpec: o.uriSpec, Enabled: o.enabled,
	}
	if err := inst.validate(); err != nil {
		return nil, err
	}
	return inst, nil
}

// newUUID returns a random (version 4) UUID, 36 characters, as Curator's ids. It takes
// the one framework makes for protected names, so that the module has one generator.
func newUUID() string {
	p := framework.NewProtectedPrefix() // "_c_" + uuid + "-"
	return strings.TrimSuffix(strings.TrimPrefix(p, framework.ProtectedPrefix), "-")
}

// LocalAddress returns the first address of this host's network interfaces that is not
// a loopback address (nor link-local, unless on a point-to-point interface), as Curator's
// ServiceInstanceBuilder.getAllLocalIPs picks by default; "" when there is none.
func LocalAddress() string {
	ifs, err := net.Interfaces()
	if err != nil {
		return ""
	}
	for _, nif := range ifs {
		if nif.Flags&net.FlagUp == 0 {
			continue
		}
		addrs, err := nif.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			ipn, ok := a.(*net.IPNet)
			if !ok || ipn.IP.IsLoopback() {
				continue
			}
			if nif.Flags&net.FlagPointToPoint == 0 && (ipn.IP.IsLinkLocalUnicast() || ipn.IP.IsLinkLocalMulticast()) {
				continue
			}
			return ipn.IP.String()
		}
	}
	return ""
}

// validName checks that s is one valid path component.
func validName(what, s string) error {
	if s == "" || strings.Contains(s, "/") || s == "." || s == ".." {
		return fmt.Errorf("%w: %s %q", ErrInvalidName, what, s)
	}
	if err := framework.ValidatePath("/" + s); err != nil {
		return fmt.Errorf("%w: %s %q: %w", ErrInvalidName, what, s, err)
	}
	return nil
}

func (i *Instance[T]) validate() error {
	if err := validName("service name", i.Name); err != nil {
		return err
	}
	if err := validName("instance id", i.ID); err != nil {
		return err
	}
	if !i.ServiceType.Valid() {
		return fmt.Errorf("%w: service type %q", ErrInvalidInstance, i.ServiceType)
	}
	for _, p := range []int{i.Port, i.SSLPort} {
		if p < 0 || p > 65535 {
			return fmt.Errorf("%w: port %d", ErrInvalidInstance, p)
		}
	}
	return nil
}

// Serialization modes.
type serialMode int

const (
	// compatible: what Curator 5.4's JsonInstanceSerializer writes by default (its
	// "compatible serialization mode", without the enabled flag), plus "enabled": false
	// at the end for a disabled instance.
	compatibleMode serialMode = iota
	// full: with "enabled" always, as Curator writes with compatibleSerializationMode false.
	fullMode
)

// Marshal returns the instance's JSON as Curator 5.4's JsonInstanceSerializer writes it
// by default: the fields name, id, address, port, sslPort, payload, registrationTimeUTC,
// serviceType and uriSpec in this order, null for unset ones; "enabled" only when false
// (Curator's default mode does not write it; Java reads a missing flag as true). A
// payload whose type implements JavaTyped gets its "@class". A payload that does not
// marshal returns ErrInvalidInstance.
func (i *Instance[T]) Marshal() ([]byte, error) { return i.marshal(compatibleMode) }

func (i *Instance[T]) marshal(mode serialMode) ([]byte, error) {
	payload, err := marshalPayload(i.Payload)
	if err != nil {
		return nil, fmt.Errorf("%w: payload of %s/%s: %w", ErrInvalidInstance, i.Name, i.ID, err)
	}
	var b bytes.Buffer
	field := func(first bool, name string, v any) {
		if !first {
			b.WriteByte(',')
		}
		k, _ := jacksonJSON(name)
		b.Write(k)
		b.WriteByte(':')
		if raw, ok := v.(json.RawMessage); ok {
			b.Write(raw)
			return
		}
		enc, _ := jacksonJSON(v) // strings, numbers, bools and *URISpec always marshal
		b.Write(enc)
	}
	b.WriteByte('{')
	field(true, "name", i.Name)
	field(false, "id", i.ID)
	field(false, "address", nullString(i.Address))
	field(false, "port", nullInt(i.Port))
	field(false, "sslPort", nullInt(i.SSLPort))
	field(false, "payload", payload)
	field(false, "registrationTimeUTC", i.RegistrationTimeUTC)
	field(false, "serviceType", nullString(string(i.ServiceType)))
	spec := i.URISpec
	if spec != nil && spec.Parts == nil {
		spec = &URISpec{Parts: []URIPart{}} // Curator's is an empty list, never null
	}
	field(false, "uriSpec", spec)
	if mode == fullMode || !i.Enabled {
		field(false, "enabled", i.Enabled)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// jacksonJSON encodes v as json.Marshal does, but writes its strings (keys included) as
// Jackson (Curator's JsonInstanceSerializer) writes them: see jacksonStrings.
func jacksonJSON(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return jacksonStrings(bytes.TrimSuffix(b.Bytes(), []byte("\n"))) // Encode ends with a newline
}

// jacksonStrings rewrites each string of the JSON text src (as encoding/json writes it)
// with Jackson's escaping: '"' and '\\' escaped, the control characters as \b, \t, \n,
// \f, \r or \u00XX (upper-case hex digits), every other character as it is (&, <, >,
// U+2028 and U+2029 included, which encoding/json escapes). Nothing outside strings
// changes.
func jacksonStrings(src []byte) ([]byte, error) {
	if bytes.IndexByte(src, '"') < 0 {
		return src, nil
	}
	out := make([]byte, 0, len(src))
	for i := 0; i < len(src); {
		if src[i] != '"' {
			out = append(out, src[i])
			i++
			continue
		}
		j := i + 1
		for j < len(src) && src[j] != '"' {
			if src[j] == '\\' {
				j++
			}
			j++
		}
		if j >= len(src) {
			return nil, fmt.Errorf("discovery: unterminated string in %q", src)
		}
		var s string
		if err := json.Unmarshal(src[i:j+1], &s); err != nil {
			return nil, err
		}
		out = appendJacksonString(out, s)
		i = j + 1
	}
	return out, nil
}

// appendJacksonString appends s as a JSON string as Jackson writes it.
func appendJacksonString(out []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	out = append(out, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			out = append(out, '\\', c)
		case c == '\b':
			out = append(out, '\\', 'b')
		case c == '\t':
			out = append(out, '\\', 't')
		case c == '\n':
			out = append(out, '\\', 'n')
		case c == '\f':
			out = append(out, '\\', 'f')
		case c == '\r':
			out = append(out, '\\', 'r')
		case c < 0x20:
			out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
		default:
			out = append(out, c)
		}
	}
	return append(out, '"')
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullInt(p int) any {
	if p == 0 {
		return nil
	}
	return p
}

// marshalPayload encodes p, with "@class" first when p's type implements JavaTyped and
// encodes as an object that has none.
func marshalPayload(p any) (json.RawMessage, error) {
	enc, err := jacksonJSON(p)
	if err != nil {
		return nil, err
	}
	jt, ok := p.(JavaTyped)
	if !ok {
		return enc, nil
	}
	if rv := reflect.ValueOf(p); rv.Kind() == reflect.Pointer && rv.IsNil() {
		return enc, nil
	}
	cls := jt.JavaClass()
	t := bytes.TrimSpace(enc)
	if cls == "" || len(t) == 0 || t[0] != '{' {
		return enc, nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(t, &probe); err != nil {
		return nil, err
	}
	if _, has := probe["@class"]; has {
		return enc, nil
	}
	name, _ := jacksonJSON(cls)
	var b bytes.Buffer
	b.WriteString(`{"@class":`)
	b.Write(name)
	rest := bytes.TrimSpace(t[1:])
	if len(rest) > 0 && rest[0] != '}' {
		b.WriteByte(',')
	}
	b.Write(rest)
	return b.Bytes(), nil
}

// wireInstance is what Unmarshal reads; unknown properties are ignored as Curator's
// serializer does.
type wireInstance struct {
	Name                *string         `json:"name"`
	ID                  *string         `json:"id"`
	Address             *string         `json:"address"`
	Port                *int            `json:"port"`
	SSLPort             *int            `json:"sslPort"`
	Payload             json.RawMessage `json:"payload"`
	RegistrationTimeUTC int64           `json:"registrationTimeUTC"`
	ServiceType         *string         `json:"serviceType"`
	URISpec             *URISpec        `json:"uriSpec"`
	Enabled             *bool           `json:"enabled"`
}

// Unmarshal reads an instance written by Curator's JsonInstanceSerializer (either mode)
// or by Marshal. A missing enabled flag reads as true, a missing service type as Dynamic
// (as Java reads them). The payload is decoded into T; a Java class name ("@class" in an
// object, or Jackson's ["class", [...]] wrapper around a list) is dropped on the way
// when T is a map, a slice or an interface. Data that is not an instance (not a JSON
// object, no name or id, an unknown service type, a payload T cannot hold) returns an
// error wrapping ErrNotInstance.
func Unmarshal[T any](data []byte) (*Instance[T], error) {
	var w wireInstance
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&w); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotInstance, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: trailing data after the JSON object", ErrNotInstance)
	}
	if w.Name == nil || *w.Name == "" || w.ID == nil || *w.ID == "" {
		return nil, fmt.Errorf("%w: no name or id", ErrNotInstance)
	}
	inst := &Instance[T]{Name: *w.Name, ID: *w.ID, RegistrationTimeUTC: w.RegistrationTimeUTC,
		ServiceType: Dynamic, URISpec: w.URISpec, Enabled: true}
	if w.Address != nil {
		inst.Address = *w.Address
	}
	if w.Port != nil {
		inst.Port = *w.Port
	}
	if w.SSLPort != nil {
		inst.SSLPort = *w.SSLPort
	}
	if w.ServiceType != nil {
		inst.ServiceType = ServiceType(*w.ServiceType)
		if !inst.ServiceType.Valid() {
			return nil, fmt.Errorf("%w: unknown service type %q", ErrNotInstance, *w.ServiceType)
		}
	}
	if w.Enabled != nil {
		inst.Enabled = *w.Enabled
	}
	if err := unmarshalPayload(w.Payload, &inst.Payload); err != nil {
		return nil, fmt.Errorf("%w: payload: %w", ErrNotInstance, err)
	}
	return inst, nil
}

func unmarshalPayload[T any](raw json.RawMessage, dst *T) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil
	}
	if _, ok := any(dst).(*json.RawMessage); ok {
		return json.Unmarshal(raw, dst)
	}
	kind := reflect.TypeFor[T]().Kind()
	generic := kind == reflect.Map || kind == reflect.Interface
	switch {
	case raw[0] == '{' && generic:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return err
		}
		if _, has := m["@class"]; has {
			delete(m, "@class")
			raw, _ = json.Marshal(m)
		}
	case raw[0] == '[' && (generic || kind == reflect.Slice || kind == reflect.Array):
		if err := json.Unmarshal(raw, dst); err == nil && kind != reflect.Interface {
			return nil
		}
		var wrap []json.RawMessage
		if json.Unmarshal(raw, &wrap) == nil && len(wrap) == 2 {
			var cls string
			inner := bytes.TrimSpace(wrap[1])
			if json.Unmarshal(wrap[0], &cls) == nil && strings.Contains(cls, ".") && len(inner) > 0 && inner[0] == '[' {
				raw = inner
			}
		}
	}
	return json.Unmarshal(raw, dst)
}
