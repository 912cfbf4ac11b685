package discovery

import (
	"fmt"
	"strconv"
	"strings"
)

// The variables URISpec.Build fills in from an instance (Curator's UriSpec.FIELD_*).
// "[" and "]" stand for literal braces.
const (
	FieldScheme              = "scheme"                // "https" with an SSL port, else "http"
	FieldName                = "name"                  // the service's name
	FieldID                  = "id"                    // the instance's id
	FieldAddress             = "address"               // the instance's address
	FieldPort                = "port"                  // the instance's port
	FieldSSLPort             = "ssl-port"              // the instance's SSL port
	FieldRegistrationTimeUTC = "registration-time-utc" // milliseconds since the epoch
	FieldServiceType         = "service-type"          // lower case: dynamic, static, ...
	FieldOpenBrace           = "["                     // a literal {
	FieldCloseBrace          = "]"                     // a literal }
)

// URIPart is one piece of a URISpec: literal text, or the name of a variable.
type URIPart struct {
	Value    string `json:"value"`
	Variable bool   `json:"variable"`
}

// URISpec is a URI template such as "{scheme}://{address}:{port}/api" (Curator's
// UriSpec), stored with an instance as its list of parts. The zero value is an empty
// template. A URISpec is a plain value: copy it freely.
type URISpec struct {
	Parts []URIPart `json:"parts"`
}

// ParseURISpec parses a template: text between braces is a variable (trimmed), the rest
// is literal. A '{' inside a variable, a '}' without its '{' or an unclosed variable is
// an error wrapping ErrInvalidURISpec.
func ParseURISpec(raw string) (*URISpec, error) {
	spec := &URISpec{Parts: []URIPart{}}
	inVar := false
	rest := raw
	for rest != "" {
		i := strings.IndexAny(rest, "{}")
		if i < 0 {
			i = len(rest)
		}
		if i > 0 { // a text token (Java's StringTokenizer skips empty ones)
			tok := rest[:i]
			if inVar {
				tok = strings.TrimSpace(tok)
			}
			spec.Parts = append(spec.Parts, URIPart{Value: tok, Variable: inVar})
			rest = rest[i:]
			continue
		}
		switch rest[0] {
		case '{':
			if inVar {
				return nil, fmt.Errorf("%w: %q: { is not allowed inside of a variable specification", ErrInvalidURISpec, raw)
			}
			inVar = true
		case '}':
			if !inVar {
				return nil, fmt.Errorf("%w: %q: } must be preceded by {", ErrInvalidURISpec, raw)
			}
			inVar = false
		}
		rest = rest[1:]
	}
	if inVar {
		return nil, fmt.Errorf("%w: %q: final variable not closed - expected }", ErrInvalidURISpec, raw)
	}
	return spec, nil
}

// MustParseURISpec is ParseURISpec for templates known to be valid; it panics on an
// invalid one (use it for constants only).
func MustParseURISpec(raw string) *URISpec {
	s, err := ParseURISpec(raw)
	if err != nil {
		panic(err)
	}
	return s
}

// String returns the template the spec was parsed from (variables in braces).
func (s *URISpec) String() string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	for _, p := range s.Parts {
		if p.Variable {
			b.WriteString("{" + p.Value + "}")
		} else {
			b.WriteString(p.Value)
		}
	}
	return b.String()
}

// Build fills in the template as Curator's UriSpec.build does. The variables come from
// fields (scheme is "https" when the instance has an SSL port, else "http"; name, id,
// address, port, ssl-port, registration-time-utc and service-type, lower case, from the
// instance, "" where a field is unset; "[" and "]" are braces), then from vars, which
// override them. A variable with no value is left out. A nil spec builds "".
func (s *URISpec) Build(fields InstanceFields, vars map[string]string) string {
	if s == nil {
		return ""
	}
	local := map[string]string{FieldOpenBrace: "{", FieldCloseBrace: "}", FieldScheme: "http"}
	var f *fieldsView
	if fields != nil {
		f = fields.instanceFields()
	}
	if f != nil {
		local[FieldName] = f.Name
		local[FieldID] = f.ID
		local[FieldAddress] = f.Address
		local[FieldPort] = portString(f.Port)
		local[FieldSSLPort] = portString(f.SSLPort)
		local[FieldRegistrationTimeUTC] = strconv.FormatInt(f.RegistrationTimeUTC, 10)
		local[FieldServiceType] = strings.ToLower(string(f.ServiceType))
		if f.SSLPort != 0 {
			local[FieldScheme] = "https"
		}
	}
	for k, v := range vars {
		local[k] = v
	}
	var b strings.Builder
	for _, p := range s.Parts {
		if !p.Variable {
			b.WriteString(p.Value)
		} else if v, ok := local[p.Value]; ok {
			b.WriteString(v)
		}
	}
	return b.String()
}

func portString(p int) string {
	if p == 0 {
		return ""
	}
	return strconv.Itoa(p)
}
