package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/zoocurator/zoocurator/zktest"
)

// TestTLSFlags: with --tls-ca, --tls-cert and --tls-key (or $ZK_TLS_*) zkcurator talks to
// a secure client port that requires a client certificate; without them it fails,
// saying why; a certificate without its key is a usage error.
func TestTLSFlags(t *testing.T) {
	srv, m := zktest.NewTLSServer(t, zktest.RequireClientCert())
	ca, cert, key, err := m.WriteClientFiles(t.TempDir())
	require.NoError(t, err)
	secure := srv.SecureConnectString()

	p := zkc(t, secure, "--tls-ca", ca, "--tls-cert", cert, "--tls-key", key, "lock", "run", "/cli/tls", "--", "echo", "held")
	assert.Equal(t, 0, p.code)
	assert.Equal(t, "held\n", p.stdout.String())

	t.Setenv("ZK_TLS_CA", ca)
	t.Setenv("ZK_TLS_CERT", cert)
	t.Setenv("ZK_TLS_KEY", key)
	p = zkc(t, secure, "lock", "run", "/cli/tls", "--", "echo", "held")
	assert.Equal(t, 0, p.code, "the same from $ZK_TLS_*")

	t.Setenv("ZK_TLS_CERT", "")
	t.Setenv("ZK_TLS_KEY", "")
	p = zkc(t, secure, "--connect-timeout", "2s", "lock", "run", "/cli/tls", "--", "true")
	assert.Equal(t, 1, p.code, "no client certificate")
	assert.Contains(t, p.stderr.String(), "TLS handshake with "+secure)

	t.Setenv("ZK_TLS_CA", "")
	p = zkc(t, secure, "--connect-timeout", "2s", "lock", "run", "/cli/tls", "--", "true")
	assert.Equal(t, 1, p.code, "plaintext on the secure port")
	assert.Contains(t, p.stderr.String(), "it needs WithTLS")

	p = zkc(t, secure, "--tls-cert", cert, "lock", "run", "/cli/tls", "--", "true")
	assert.Equal(t, 2, p.code, "a certificate without its key")
	assert.Contains(t, p.stderr.String(), "--tls-cert and --tls-key go together")

	children, err := zktest.Children(context.Background(), srv.ConnectString(), "/cli/tls")
	require.NoError(t, err)
	assert.Empty(t, children, "every run released its lock node")
}
