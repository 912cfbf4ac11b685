package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"os"
)

// tlsFiles are the PEM files of --tls-ca, --tls-cert and --tls-key.
type tlsFiles struct {
	ca, cert, key string
}

// tlsFilesFromEnv returns the defaults: $ZK_TLS_CA, $ZK_TLS_CERT, $ZK_TLS_KEY.
func tlsFilesFromEnv() tlsFiles {
	return tlsFiles{ca: os.Getenv("ZK_TLS_CA"), cert: os.Getenv("ZK_TLS_CERT"), key: os.Getenv("ZK_TLS_KEY")}
}

func (f *tlsFiles) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&f.ca, "tls-ca", f.ca, "speak TLS to ZooKeeper, trusting the PEM certificates in `file` (default $ZK_TLS_CA)")
	fs.StringVar(&f.cert, "tls-cert", f.cert, "present this PEM client certificate `file` (mutual TLS; default $ZK_TLS_CERT)")
	fs.StringVar(&f.key, "tls-key", f.key, "the PEM key `file` of --tls-cert (default $ZK_TLS_KEY)")
}

// config returns the TLS config the files make, nil when none is given (plain TCP).
func (f *tlsFiles) config() (*tls.Config, error) {
	if f.ca == "" && f.cert == "" && f.key == "" {
		return nil, nil
	}
	cfg := &tls.Config{}
	if f.ca != "" {
		pem, err := os.ReadFile(f.ca)
		if err != nil {
			return nil, usagef("", "--tls-ca: %v", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, usagef("", "--tls-ca: %s holds no PEM certificate", f.ca)
		}
	}
	if (f.cert == "") != (f.key == "") {
		return nil, usagef("", "--tls-cert and --tls-key go together")
	}
	if f.cert != "" {
		pair, err := tls.LoadX509KeyPair(f.cert, f.key)
		if err != nil {
			return nil, usagef("", "--tls-cert, --tls-key: %v", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}
