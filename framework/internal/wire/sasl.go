package wire

import (
	"context"
	"crypto/md5"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"unicode/utf8"

	"github.com/go-zookeeper/zk"
)

// SASLDigest is a user and password that a server whose JAAS configuration lists the
// user (a "Server" section with ZooKeeper's DigestLoginModule, user_<name>="<password>")
// takes through SASL DIGEST-MD5 (RFC 2831): the server then knows the connection as
// the "sasl" identity Username (ACL sasl:<name>:<perms>).
type SASLDigest struct {
	Username string
	Password string
}

// The names the Java client and server put in DIGEST-MD5's digest-uri: the protocol
// "zookeeper" and the server name "zk-sasl-md5", fixed on both sides
// (ZooKeeperSaslClient, ZooKeeperSaslServer), whatever the server's host.
const (
	saslProtocol   = "zookeeper"
	saslServerName = "zk-sasl-md5"
	saslDigestURI  = saslProtocol + "/" + saslServerName
)

// maxDigestChallenge bounds a digest-challenge and the server's final message, as RFC
// 2831 does (less than 2048 bytes) and the Java client checks.
const maxDigestChallenge = 2048

// digestChallenge is what a DIGEST-MD5 digest-challenge offers (RFC 2831 2.1.1).
type digestChallenge struct {
	realms    []string // zero or more; the Java server sends its server name
	nonce     string
	qop       []string // the qop-options, "auth" when absent
	utf8      bool     // charset=utf-8: user names and passwords may be UTF-8
	algorithm string   // "md5-sess", required
}

// parseDigestChallenge parses a digest-challenge. It fails (ErrMalformed) on bytes that
// are not a list of directives, a directive that may appear once and appears twice, a
// missing nonce or algorithm, an algorithm other than md5-sess and a charset other than
// utf-8. Unknown directives are ignored, as the RFC asks.
func parseDigestChallenge(b []byte) (*digestChallenge, error) {
	dirs, err := parseDirectives(b)
	if err != nil {
		return nil, err
	}
	ch := &digestChallenge{qop: []string{"auth"}}
	seen := map[string]bool{}
	for _, d := range dirs {
		if d.key != "realm" && seen[d.key] {
			switch d.key {
			case "nonce", "qop", "charset", "algorithm", "maxbuf", "stale", "cipher":
				return nil, fmt.Errorf("%w: DIGEST-MD5 challenge: directive %s more than once", ErrMalformed, d.key)
			}
		}
		seen[d.key] = true
		switch d.key {
		case "realm":
			ch.realms = append(ch.realms, d.value)
		case "nonce":
			ch.nonce = d.value
		case "qop":
			ch.qop = splitList(d.value)
		case "charset":
			if !strings.EqualFold(d.value, "utf-8") {
				return nil, fmt.Errorf("%w: DIGEST-MD5 challenge: charset %q (only utf-8 may be named)", ErrMalformed, d.value)
			}
			ch.utf8 = true
		case "algorithm":
			ch.algorithm = d.value
		}
	}
	switch {
	case ch.nonce == "":
		return nil, fmt.Errorf("%w: DIGEST-MD5 challenge without a nonce", ErrMalformed)
	case ch.algorithm == "":
		return nil, fmt.Errorf("%w: DIGEST-MD5 challenge without an algorithm", ErrMalformed)
	case !strings.EqualFold(ch.algorithm, "md5-sess"):
		return nil, fmt.Errorf("%w: DIGEST-MD5 challenge: algorithm %q, not md5-sess", ErrMalformed, ch.algorithm)
	}
	return ch, nil
}

// directive is one key=value of a DIGEST-MD5 message: the key in lower case, the value
// without its quotes and escapes.
type directive struct{ key, value string }

// parseDirectives parses a DIGEST-MD5 message: 1#( token "=" ( token | quoted-string ) )
// with linear white space around the elements and empty elements allowed (RFC 2616's
// #rule). In a quoted string a backslash escapes the next byte.
func parseDirectives(b []byte) ([]directive, error) {
	if len(b) >= maxDigestChallenge {
		return nil, fmt.Errorf("%w: DIGEST-MD5 message of %d bytes (at most %d)", ErrMalformed, len(b), maxDigestChallenge-1)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: DIGEST-MD5 message: "+format, append([]any{ErrMalformed}, args...)...)
	}
	var out []directive
	i := 0
	skipLWS := func() {
		for i < len(b) && isLWS(b[i]) {
			i++
		}
	}
	for {
		skipLWS()
		if i == len(b) {
			return out, nil
		}
		if b[i] == ',' { // an empty element
			i++
			continue
		}
		start := i
		for i < len(b) && isTokenChar(b[i]) {
			i++
		}
		if i == start {
			return nil, bad("byte %q at offset %d where a directive's name was expected", b[i], i)
		}
		key := strings.ToLower(string(b[start:i]))
		skipLWS()
		if i == len(b) || b[i] != '=' {
			return nil, bad("directive %s without '='", key)
		}
		i++
		skipLWS()
		var value string
		switch {
		case i == len(b):
			return nil, bad("directive %s without a value", key)
		case b[i] == '"':
			i++
			var v []byte
			for {
				if i == len(b) {
					return nil, bad("directive %s: unterminated quoted string", key)
				}
				c := b[i]
				i++
				if c == '"' {
					break
				}
				if c == '\\' {
					if i == len(b) {
						return nil, bad("directive %s: unterminated quoted string", key)
					}
					c = b[i]
					i++
				}
				v = append(v, c)
			}
			value = string(v)
		default:
			start := i
			for i < len(b) && isTokenChar(b[i]) {
				i++
			}
			if i == start {
				return nil, bad("directive %s: byte %q at offset %d where a value was expected", key, b[i], i)
			}
			value = string(b[start:i])
		}
		out = append(out, directive{key, value})
		skipLWS()
		if i < len(b) {
			if b[i] != ',' {
				return nil, bad("byte %q at offset %d after directive %s", b[i], i, key)
			}
			i++
		}
	}
}

func isLWS(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// isTokenChar reports whether c may be in an RFC 2616 token: a visible US-ASCII character
// other than the separators.
func isTokenChar(c byte) bool {
	if c <= ' ' || c >= 0x7f {
		return false
	}
	return !strings.ContainsRune(`()<>@,;:\"/[]?={}`, rune(c))
}

// splitList splits a quoted comma-separated list (qop-options), dropping LWS and empty
// elements.
func splitList(s string) []string {
	var out []string
	for _, e := range strings.Split(s, ",") {
		if e = strings.Trim(e, " \t\r\n"); e != "" {
			out = append(out, e)
		}
	}
	return out
}

// digestMD5 is the client's side of one DIGEST-MD5 authentication with qop "auth" (no
// integrity or privacy layer, which ZooKeeper's connection does not use): respond
// answers the server's challenge, verify checks the server's rspauth, which proves that
// the server knows the password too.
type digestMD5 struct {
	username, password string
	authzid            string // "" for none; the Java client sends the user name
	digestURI          string
	cnonce             string // made by respond when empty (set by tests)

	rspauth string // what verify expects, set by respond
}

// respond parses the server's digest-challenge and returns the digest-response: with
// the first realm offered (the Java client's default choice), the nonce, a new cnonce,
// nc 00000001 and qop auth.
func (m *digestMD5) respond(challenge []byte) ([]byte, error) {
	ch, err := parseDigestChallenge(challenge)
	if err != nil {
		return nil, err
	}
	auth := false
	for _, q := range ch.qop {
		auth = auth || strings.EqualFold(q, "auth")
	}
	if !auth {
		return nil, fmt.Errorf("%w: DIGEST-MD5 challenge offers qop %q, without auth", ErrMalformed, ch.qop)
	}
	realm := ""
	if len(ch.realms) > 0 {
		realm = ch.realms[0]
	}
	if m.cnonce == "" {
		m.cnonce = rand.Text()
	}
	// The hashed strings are in ISO 8859-1 where they can be, in UTF-8 otherwise when the
	// server named charset=utf-8 (RFC 2831 2.1.2.1); the strings sent likewise.
	user, err := digestString(m.username, ch.utf8, "user name")
	if err != nil {
		return nil, err
	}
	pass, err := digestString(m.password, ch.utf8, "password")
	if err != nil {
		return nil, err
	}
	// The realm's bytes are the server's: ISO 8859-1 as they are, UTF-8 made ISO 8859-1
	// where it can be.
	rlm, rlmSent := realm, realm
	if ch.utf8 {
		if rlm, err = digestString(realm, true, "realm"); err != nil {
			return nil, err
		}
	}
	authz, err := digestString(m.authzid, ch.utf8, "authzid")
	if err != nil {
		return nil, err
	}
	p := digestParams{username: user, realm: rlm, password: pass, nonce: ch.nonce, cnonce: m.cnonce,
		nc: "00000001", qop: "auth", digestURI: m.digestURI, authzid: authz}
	m.rspauth = p.value("")

	var b strings.Builder
	if ch.utf8 {
		b.WriteString("charset=utf-8,")
	}
	// The user name and authzid go in UTF-8 after charset=utf-8, else in ISO 8859-1; the
	// realm and nonce as received, the rest is ASCII.
	b.WriteString(`username=` + quote(sent(m.username, ch.utf8)))
	if realm != "" {
		b.WriteString(`,realm=` + quote(rlmSent))
	}
	b.WriteString(`,nonce=` + quote(ch.nonce))
	b.WriteString(`,nc=` + p.nc)
	b.WriteString(`,cnonce=` + quote(m.cnonce))
	b.WriteString(`,digest-uri=` + quote(m.digestURI))
	b.WriteString(`,response=` + p.value("AUTHENTICATE"))
	b.WriteString(`,qop=auth`)
	if m.authzid != "" {
		b.WriteString(`,authzid=` + quote(sent(m.authzid, ch.utf8)))
	}
	return []byte(b.String()), nil
}

// verify checks the server's last message, rspauth=<response-value>, against what the
// password gives (RFC 2831 2.1.3). A mismatch wraps zk.ErrAuthFailed: the server does not
// know the password it claims to have checked.
func (m *digestMD5) verify(final []byte) error {
	dirs, err := parseDirectives(final)
	if err != nil {
		return err
	}
	got := ""
	for _, d := range dirs {
		if d.key == "rspauth" {
			if got != "" {
				return fmt.Errorf("%w: DIGEST-MD5: rspauth more than once", ErrMalformed)
			}
			got = d.value
		}
	}
	if got == "" {
		return fmt.Errorf("%w: DIGEST-MD5: the server's last message has no rspauth", ErrMalformed)
	}
	if m.rspauth == "" || subtle.ConstantTimeCompare([]byte(strings.ToLower(got)), []byte(m.rspauth)) != 1 {
		return fmt.Errorf("%w: DIGEST-MD5: the server's rspauth does not match the password", zk.ErrAuthFailed)
	}
	return nil
}

// digestParams are the inputs of a DIGEST-MD5 response-value, as the bytes hashed.
type digestParams struct {
	username, realm, password string
	nonce, cnonce, nc, qop    string
	digestURI, authzid        string
}

// value is the response-value of RFC 2831 2.1.2.1 for qop auth, with A2 starting with
// method: "AUTHENTICATE" for the client's response, "" for the server's rspauth.
//
//	A1 = { H( { username, ":", realm, ":", passwd } ), ":", nonce, ":", cnonce [ ":", authzid ] }
//	A2 = { method, ":", digest-uri }
//	response-value = HEX( KD( HEX(H(A1)), { nonce, ":", nc, ":", cnonce, ":", qop, ":", HEX(H(A2)) } ) )
//	KD(k, s) = H({ k, ":", s })
func (p digestParams) value(method string) string {
	inner := md5.Sum([]byte(p.username + ":" + p.realm + ":" + p.password))
	a1 := string(inner[:]) + ":" + p.nonce + ":" + p.cnonce
	if p.authzid != "" {
		a1 += ":" + p.authzid
	}
	ha1 := md5.Sum([]byte(a1))
	ha2 := md5.Sum([]byte(method + ":" + p.digestURI))
	kd := md5.Sum([]byte(hex.EncodeToString(ha1[:]) + ":" + p.nonce + ":" + p.nc + ":" + p.cnonce + ":" +
		p.qop + ":" + hex.EncodeToString(ha2[:])))
	return hex.EncodeToString(kd[:])
}

// digestString returns the bytes of s that DIGEST-MD5 hashes: ISO 8859-1 when every
// character of s has a code there, else UTF-8, which only a server that named
// charset=utf-8 takes. s must be valid UTF-8.
func digestString(s string, utf8OK bool, what string) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("wire: SASL DIGEST-MD5: the %s is not valid UTF-8", what)
	}
	latin := make([]byte, 0, len(s))
	for _, r := range s {
		if r > 0xff {
			if !utf8OK {
				return "", fmt.Errorf("wire: SASL DIGEST-MD5: the %s has characters beyond ISO 8859-1 and the server did not name charset=utf-8", what)
			}
			return s, nil
		}
		latin = append(latin, byte(r))
	}
	return string(latin), nil
}

// sent returns s as the digest-response carries it: in UTF-8 after charset=utf-8, else
// in ISO 8859-1 (digestString checked that it can be).
func sent(s string, utf8OK bool) string {
	if utf8OK {
		return s
	}
	v, _ := digestString(s, false, "")
	return v
}

// quote makes a quoted-string of s: a backslash before each '"' and '\'.
func quote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' || s[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	b.WriteByte('"')
	return b.String()
}

// errNoChallenge is the cause of a refusal by a server that answered the first SASL
// packet with no challenge: it has no SASL login configured, so no server of the
// ensemble will take the credentials.
var errNoChallenge = fmt.Errorf("%w: the server sent no DIGEST-MD5 challenge (no SASL login configured on it)", zk.ErrAuthFailed)

// saslRefused is the error for a SASL reply with an error code: the server refused the
// credentials (AuthFailed, or SessionClosedRequireSaslAuth when it requires SASL) and
// closes the connection. It wraps zk.ErrAuthFailed and the *Error.
func saslRefused(code int32, zxid int64) error {
	err := codeError(code, zxid)
	if errors.Is(err, zk.ErrAuthFailed) {
		return fmt.Errorf("server refused the credentials: %w", err)
	}
	return fmt.Errorf("server refused the credentials: %w (%w)", zk.ErrAuthFailed, err)
}

// authenticateSASL runs SASL DIGEST-MD5 on a connection whose handshake is done, within
// ctx, and returns the last xid it used. It runs before the Conn's goroutines start and
// before any other request: the server sends nothing else meanwhile (the connection has
// no watches yet, and no ping was sent), and the Java client too holds every packet back
// until SASL is through.
func authenticateSASL(ctx context.Context, nc net.Conn, cred *SASLDigest, maxFrame int) (int32, error) {
	release := bound(ctx, nc)
	m := &digestMD5{username: cred.Username, password: cred.Password, authzid: cred.Username, digestURI: saslDigestURI}
	// 1. DIGEST-MD5 has no initial response: an empty token asks for the challenge.
	challenge, err := saslRoundTrip(nc, 1, []byte{}, maxFrame)
	if err == nil && len(challenge) == 0 {
		err = errNoChallenge
	}
	// 2. The digest-response; the server answers with its rspauth, or refuses.
	var final []byte
	if err == nil {
		var resp []byte
		if resp, err = m.respond(challenge); err == nil {
			final, err = saslRoundTrip(nc, 2, resp, maxFrame)
		}
	}
	// 3. The rspauth proves that the server knows the password too.
	if err == nil {
		err = m.verify(final)
	}
	// ctx's end is the cause of an I/O error that came after it (a refusal is a refusal).
	if cerr := release(); err == nil {
		err = cerr
	} else if cerr := ctxErr(ctx); cerr != nil && !errors.Is(err, zk.ErrAuthFailed) {
		err = fmt.Errorf("%w (%w)", cerr, err)
	}
	return 2, err
}

// saslRoundTrip sends a SASL token with xid and returns the server's token.
func saslRoundTrip(nc net.Conn, xid int32, token []byte, maxFrame int) ([]byte, error) {
	f := newFrame()
	(&requestHeader{xid: xid, opcode: opSASL}).encode(f)
	(&saslRequest{token: token}).encode(f)
	if _, err := nc.Write(f.finish()); err != nil {
		return nil, err
	}
	body, err := readFrame(nc, maxFrame)
	if err != nil {
		return nil, err
	}
	d := &decoder{b: body}
	var h replyHeader
	h.decode(d)
	if d.err != nil {
		return nil, d.err
	}
	if h.xid != xid {
		return nil, fmt.Errorf("%w: SASL reply with xid %d, expected %d", ErrMalformed, h.xid, xid)
	}
	if h.err != 0 {
		return nil, saslRefused(h.err, h.zxid)
	}
	var rsp saslResponse
	rsp.decode(d)
	if d.err != nil {
		return nil, d.err
	}
	return rsp.token, nil
}
