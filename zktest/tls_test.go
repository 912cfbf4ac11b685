package zktest_test

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/zoocurator/zoocurator/zktest"
)

// TestTLSServerServesTLS: the secure port completes a TLS handshake with the material's
// client config and the plain port still answers four-letter words.
func TestTLSServerServesTLS(t *testing.T) {
	for _, mutual := range []bool{false, true} {
		var opts []zktest.TLSOption
		if mutual {
			opts = append(opts, zktest.RequireClientCert())
		}
		s, m := zktest.NewTLSServer(t, opts...)
		if s.SecureConnectString() == "" {
			t.Fatal("no secure connect string")
		}
		conn, err := tls.Dial("tcp", s.SecureConnectString(), m.ClientConfig())
		if err != nil {
			t.Fatalf("mutual=%v: TLS dial: %v", mutual, err)
		}
		if st := conn.ConnectionState(); !st.HandshakeComplete || len(st.PeerCertificates) == 0 {
			t.Fatalf("mutual=%v: handshake incomplete: %+v", mutual, st)
		}
		conn.Close()
		if _, err := zktest.FourLetterWord(s.Addr(), "ruok", 5*time.Second); err != nil {
			t.Fatalf("plain port: %v", err)
		}
	}
}
