package zktest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The server's side of SASL DIGEST-MD5: ZooKeeper reads its users from the "Server"
// section of the JAAS configuration (java.security.auth.login.config), options
// user_<name>="<password>" of its DigestLoginModule; the "sasl" scheme of ACLs needs its
// SASLAuthenticationProvider registered (zookeeper.authProvider.<n>).
const (
	saslLoginModule = "org.apache.zookeeper.server.auth.DigestLoginModule"
	saslProvider    = "org.apache.zookeeper.server.auth.SASLAuthenticationProvider"
)

// WithSASLDigestUsers makes StartStandalone start a server that takes SASL DIGEST-MD5
// from the users given (name → password): a JAAS configuration with a "Server" section
// of ZooKeeper's DigestLoginModule listing them, written to the server's directory and
// named by -Djava.security.auth.login.config, and the SASL authentication provider
// (-Dzookeeper.authProvider.sasl), so that ACLs of scheme "sasl" (sasl:<name>:<perms>)
// are accepted and enforced. A client that authenticates as a user is the "sasl"
// identity <name>; clients without SASL are served as before (SASL is not required).
// Names are letters, digits, '.', '-' and '_'; passwords are printable ASCII without '"',
// '\' and '$' (the JAAS file quotes them and expands ${...}): others make
// StartStandalone fail. The default is no SASL. A server with SASL users is one started
// from a local install: ZK_TEST_CONNECT and containers are not used.
func WithSASLDigestUsers(users map[string]string) StandaloneOption {
	return func(o *standaloneOptions) { o.sasl, o.local = newSASLSetup(users), true }
}

// WithEnsembleSASLDigestUsers gives every member of an ensemble the SASL DIGEST-MD5 users
// of WithSASLDigestUsers (the same for all, as a client that moves between members
// needs). An ensemble with SASL always starts from a local install: ZK_TEST_CONNECT is
// not used.
func WithEnsembleSASLDigestUsers(users map[string]string) EnsembleOption {
	return func(o *ensembleOptions) { o.sasl = newSASLSetup(users) }
}

// NewSASLServer is StartStandalone with WithSASLDigestUsers for a test, stopped at the
// test's cleanup (its logs kept when the test failed). When no local install is
// available it fails the test, or skips it under -short.
func NewSASLServer(t testing.TB, users map[string]string) *Server {
	t.Helper()
	s, err := StartStandalone(context.Background(), WithSASLDigestUsers(users))
	if err != nil {
		unavailable(t, err)
	}
	t.Cleanup(func() {
		keepLogs(t, s.dir)
		_ = s.Close()
	})
	return s
}

// saslSetup is the SASL DIGEST-MD5 users of a server.
type saslSetup struct{ users map[string]string }

func newSASLSetup(users map[string]string) *saslSetup {
	s := &saslSetup{users: make(map[string]string, len(users))}
	for n, p := range users {
		s.users[n] = p
	}
	return s
}

// check says whether every name and password can be written to a JAAS file.
func (s *saslSetup) check() error {
	if len(s.users) == 0 {
		return errors.New("zktest: WithSASLDigestUsers: no users")
	}
	for n, p := range s.users {
		if n == "" || strings.IndexFunc(n, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '-' || r == '_')
		}) >= 0 {
			return fmt.Errorf("zktest: WithSASLDigestUsers: user name %q: want letters, digits, '.', '-' and '_'", n)
		}
		if strings.IndexFunc(p, func(r rune) bool { return r < ' ' || r > '~' || r == '"' || r == '\\' || r == '$' }) >= 0 {
			return fmt.Errorf("zktest: WithSASLDigestUsers: the password of %q: want printable ASCII without '\"', '\\' and '$'", n)
		}
	}
	return nil
}

// write writes jaas.conf to dir and returns the JVM flags of a server that uses it.
func (s *saslSetup) write(dir string) ([]string, error) {
	if err := s.check(); err != nil {
		return nil, err
	}
	names := make([]string, 0, len(s.users))
	for n := range s.users {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("Server {\n    " + saslLoginModule + " required")
	for _, n := range names {
		fmt.Fprintf(&b, "\n    user_%s=\"%s\"", n, s.users[n])
	}
	b.WriteString(";\n};\n")
	path := filepath.Join(dir, "jaas.conf")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		return nil, err
	}
	return []string{
		"-Djava.security.auth.login.config=" + path,
		"-Dzookeeper.authProvider.sasl=" + saslProvider,
	}, nil
}
