package zktest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TLSMaterial is a certificate authority made for a test, with a server certificate (for
// 127.0.0.1 and localhost) and a client certificate it signed. The keys never leave
// memory but for the files a server (or a program under test) reads.
type TLSMaterial struct {
	CA         *x509.Certificate // the authority's certificate
	CAPool     *x509.CertPool    // a pool holding CA: a client's RootCAs
	ClientCert tls.Certificate   // a client certificate CA signed (mutual TLS)

	caPEM, serverPEM, clientCertPEM, clientKeyPEM []byte
}

// NewTLSMaterial makes a new authority, server and client certificate (ECDSA P-256,
// valid for a day).
func NewTLSMaterial() (*TLSMaterial, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	caTmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "zktest CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage, ips []net.IP, dns []string) (certPEM, keyPEM []byte, err error) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, nil, err
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips, DNSNames: dns,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return nil, nil, err
		}
		pk, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
			pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), nil
	}
	m := &TLSMaterial{CA: ca, CAPool: x509.NewCertPool(),
		caPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})}
	m.CAPool.AddCert(ca)
	srvCert, srvKey, err := leaf(2, "zktest server", x509.ExtKeyUsageServerAuth,
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, []string{"localhost"})
	if err != nil {
		return nil, err
	}
	m.serverPEM = append(srvKey, srvCert...)
	if m.clientCertPEM, m.clientKeyPEM, err = leaf(3, "zktest client", x509.ExtKeyUsageClientAuth, nil, nil); err != nil {
		return nil, err
	}
	if m.ClientCert, err = tls.X509KeyPair(m.clientCertPEM, m.clientKeyPEM); err != nil {
		return nil, err
	}
	return m, nil
}

// ClientConfig returns a client config that trusts CA and presents the client
// certificate (which a server without RequireClientCert does not ask for).
func (m *TLSMaterial) ClientConfig() *tls.Config {
	return &tls.Config{RootCAs: m.CAPool, Certificates: []tls.Certificate{m.ClientCert}}
}

// WriteClientFiles writes ca.pem, client.pem (the client certificate) and client-key.pem
// (its key) to dir, for a program that reads them (zkcurator's --tls-ca, --tls-cert,
// --tls-key), and returns their paths.
func (m *TLSMaterial) WriteClientFiles(dir string) (ca, cert, key string, err error) {
	ca, cert, key = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "client.pem"), filepath.Join(dir, "client-key.pem")
	for _, f := range []struct {
		path string
		data []byte
	}{{ca, m.caPEM}, {cert, m.clientCertPEM}, {key, m.clientKeyPEM}} {
		if err := os.WriteFile(f.path, f.data, 0o600); err != nil {
			return "", "", "", err
		}
	}
	return ca, cert, key, nil
}

// TLSOption configures StartTLSServer.
type TLSOption func(*tlsSetup)

// RequireClientCert makes the server require a client certificate signed by the
// material's CA (mutual TLS: ZooKeeper's ssl.clientAuth=need). Without it the server asks
// for none (ssl.clientAuth=none).
func RequireClientCert() TLSOption { return func(s *tlsSetup) { s.clientAuth = "need" } }

// WithTLSMaterial makes the server use m instead of material made for it.
func WithTLSMaterial(m *TLSMaterial) TLSOption { return func(s *tlsSetup) { s.m = m } }

// tlsSetup is how a server's secure client port is configured.
type tlsSetup struct {
	m          *TLSMaterial
	clientAuth string
}

// write writes the server's key store (its key and certificate) and trust store (the CA)
// as PEM files to dir, and returns the config lines for a secure client port on a free
// port, and that port's address.
func (s *tlsSetup) write(dir string) (lines []string, addr string, err error) {
	keyStore, trustStore := filepath.Join(dir, "server-keystore.pem"), filepath.Join(dir, "truststore.pem")
	if err := os.WriteFile(keyStore, s.m.serverPEM, 0o600); err != nil {
		return nil, "", err
	}
	if err := os.WriteFile(trustStore, s.m.caPEM, 0o600); err != nil {
		return nil, "", err
	}
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	return []string{
		"serverCnxnFactory=org.apache.zookeeper.server.NettyServerCnxnFactory",
		"secureClientPort=" + strconv.Itoa(port),
		"secureClientPortAddress=127.0.0.1",
		"ssl.keyStore.location=" + keyStore,
		"ssl.keyStore.type=PEM",
		"ssl.trustStore.location=" + trustStore,
		"ssl.trustStore.type=PEM",
		"ssl.clientAuth=" + s.clientAuth,
	}, "127.0.0.1:" + strconv.Itoa(port), nil
}

// StartTLSServer starts a standalone server from a local install with a secure client
// port (ZooKeeper's NettyServerCnxnFactory and secureClientPort; its key and trust
// stores are PEM files made from the material) besides its plain one, and waits until
// both answer. SecureConnectString names the secure port. The caller must Close it.
func StartTLSServer(ctx context.Context, opts ...TLSOption) (*Server, *TLSMaterial, error) {
	setup := &tlsSetup{clientAuth: "none"}
	for _, o := range opts {
		o(setup)
	}
	if setup.m == nil {
		m, err := NewTLSMaterial()
		if err != nil {
			return nil, nil, fmt.Errorf("zktest: TLS material: %w", err)
		}
		setup.m = m
	}
	inst, err := findInstall()
	if err != nil {
		return nil, nil, fmt.Errorf("%w (a TLS server needs a local install)\n%s", err, howToGet)
	}
	s, err := startLocalServer(ctx, inst, serverPlace{}, localExtras{tls: setup})
	if err != nil {
		return nil, nil, err
	}
	if err := waitTLS(ctx, s.secure, setup.m); err != nil {
		err = fmt.Errorf("%w\n%s", err, s.proc.logTail())
		_ = s.Close()
		return nil, nil, err
	}
	return s, setup.m, nil
}

// waitTLS waits until a TLS handshake with addr succeeds.
func waitTLS(ctx context.Context, addr string, m *TLSMaterial) error {
	deadline := time.Now().Add(startTimeout)
	var last error
	for time.Now().Before(deadline) && ctx.Err() == nil {
		d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: m.ClientConfig()}
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		conn, err := d.DialContext(hctx, "tcp", addr)
		cancel()
		if err == nil {
			conn.Close()
			return nil
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("zktest: secure port %s not serving TLS: %v", addr, last)
}

// NewTLSServer is StartTLSServer for a test, stopped at the test's cleanup (its logs kept
// when the test failed). When no local install is available it fails the test, or skips
// it under -short.
func NewTLSServer(t testing.TB, opts ...TLSOption) (*Server, *TLSMaterial) {
	t.Helper()
	s, m, err := StartTLSServer(context.Background(), opts...)
	if err != nil {
		unavailable(t, err)
	}
	t.Cleanup(func() {
		keepLogs(t, s.dir)
		_ = s.Close()
	})
	return s, m
}

// SecureConnectString returns host:port of the server's secure (TLS) client port, ""
// when it has none. ConnectString stays the plain port.
func (s *Server) SecureConnectString() string { return s.secure }

// NewRawProxy is NewProxy for traffic that is not ZooKeeper's plain client frames — a
// secure client port's TLS records: it carries bytes as they come. DropConnections,
// Stall, Refuse and the rest work on it; DropNextCreateReply does nothing (it cannot see
// requests in TLS), and Forwarded counts chunks of bytes, not requests.
func NewRawProxy(t testing.TB, connect string) *Proxy {
	t.Helper()
	hosts, chroot := connect, ""
	if i := strings.IndexByte(connect, '/'); i >= 0 {
		hosts, chroot = connect[:i], connect[i:]
	}
	p, err := startProxy(true, strings.Split(hosts, ",")...)
	if err != nil {
		t.Fatalf("zktest: start proxy: %v", err)
	}
	p.chroot = chroot
	t.Cleanup(func() { _ = p.Close() })
	return p
}

// WithEnsembleTLS gives every member of an ensemble a secure client port besides its
// plain one, as StartTLSServer does for a standalone server: ZooKeeper's
// NettyServerCnxnFactory and secureClientPort, with key and trust stores made from m
// (whose server certificate names 127.0.0.1 and localhost, so one serves every member).
// RequireClientCert among opts asks for mutual TLS; WithTLSMaterial is ignored (m is the
// material). StartEnsemble waits until every member completes a TLS handshake;
// SecureConnectString and SecureAddr name the secure ports. An ensemble with TLS always
// starts from a local install: ZK_TEST_CONNECT names no secure port. A nil m makes
// StartEnsemble fail.
func WithEnsembleTLS(m *TLSMaterial, opts ...TLSOption) EnsembleOption {
	return func(o *ensembleOptions) {
		s := &tlsSetup{clientAuth: "none"}
		for _, opt := range opts {
			if opt != nil {
				opt(s)
			}
		}
		s.m = m
		o.tls = s
	}
}

// addSecurePort adds to a member's config lines (extra) those of a secure client port
// when the ensemble has TLS, writing the member's stores to its directory mdir, and
// records the port's address.
func (e *Ensemble) addSecurePort(o ensembleOptions, mdir string, extra []string) ([]string, error) {
	if o.tls == nil {
		return extra, nil
	}
	if o.tls.m == nil {
		return nil, fmt.Errorf("zktest: WithEnsembleTLS: nil TLS material")
	}
	lines, addr, err := o.tls.write(mdir)
	if err != nil {
		return nil, err
	}
	e.secure = append(e.secure, addr)
	return append(extra, lines...), nil
}

// waitSecure waits until every member's secure port completes a TLS handshake.
func (e *Ensemble) waitSecure(o ensembleOptions) error {
	for i, addr := range e.secure {
		if err := waitTLS(context.Background(), addr, o.tls.m); err != nil {
			return fmt.Errorf("zktest: member %d: %w\n%s", i, err, e.members[i].logTail())
		}
	}
	return nil
}

// SecureConnectString returns the members' secure (TLS) client addresses,
// comma-separated: a connect string for a client with framework.WithTLS. It is "" for an
// ensemble started without WithEnsembleTLS. ConnectString stays the plain ports.
func (e *Ensemble) SecureConnectString() string { return strings.Join(e.secure, ",") }

// SecureAddr returns member i's secure client address ("" without WithEnsembleTLS).
func (e *Ensemble) SecureAddr(i int) string {
	if i < 0 || i >= len(e.secure) {
		return ""
	}
	return e.secure[i]
}
