package wire

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// RFC 2831's example (section 4): the server's challenge, and the client's response with
// the example's cnonce, then the server's rspauth.
const (
	rfcChallenge = `realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",qop="auth",algorithm=md5-sess,charset=utf-8`
	rfcResponse  = `charset=utf-8,username="chris",realm="elwood.innosoft.com",nonce="OA6MG9tEQGm2hh",nc=00000001,` +
		`cnonce="OA6MHXh6VqTrRk",digest-uri="imap/elwood.innosoft.com",response=d388dad90d4bbd760a152321f2143af7,qop=auth`
	rfcRspauth = `rspauth=ea40f60335c427b5527b84dbabcdfffd`
)

func rfcClient() *digestMD5 {
	return &digestMD5{username: "chris", password: "secret", digestURI: "imap/elwood.innosoft.com", cnonce: "OA6MHXh6VqTrRk"}
}

func TestDigestMD5ResponseValueOfRFCExample(t *testing.T) {
	p := digestParams{username: "chris", realm: "elwood.innosoft.com", password: "secret",
		nonce: "OA6MG9tEQGm2hh", cnonce: "OA6MHXh6VqTrRk", nc: "00000001", qop: "auth",
		digestURI: "imap/elwood.innosoft.com"}
	assert.Equal(t, "d388dad90d4bbd760a152321f2143af7", p.value("AUTHENTICATE"), "response")
	assert.Equal(t, "ea40f60335c427b5527b84dbabcdfffd", p.value(""), "rspauth")
}

func TestDigestMD5AnswersRFCExample(t *testing.T) {
	m := rfcClient()
	got, err := m.respond([]byte(rfcChallenge))
	require.NoError(t, err)
	assert.Equal(t, rfcResponse, string(got))
	assert.NoError(t, m.verify([]byte(rfcRspauth)))
	assert.NoError(t, m.verify([]byte(" RSPAUTH = \"EA40F60335C427B5527B84DBABCDFFFD\" ")), "keys and hex digits in any case, quoted")
}

func TestDigestMD5RefusesWrongRspauth(t *testing.T) {
	m := rfcClient()
	_, err := m.respond([]byte(rfcChallenge))
	require.NoError(t, err)
	err = m.verify([]byte(`rspauth=ea40f60335c427b5527b84dbabcdfffe`))
	assert.ErrorIs(t, err, zk.ErrAuthFailed)
	for _, final := range []string{``, `rspauth=`, `realm="x"`, `rspauth=a,rspauth=a`, `rspauth="unterminated`} {
		err := m.verify([]byte(final))
		assert.ErrorIs(t, err, ErrMalformed, "%q", final)
	}
	fresh := rfcClient() // respond never ran: nothing to match
	assert.ErrorIs(t, fresh.verify([]byte(rfcRspauth)), zk.ErrAuthFailed)
}

// The Java client sends authzid, the user name, and hashes it into A1; the server's
// rspauth is computed with it too.
func TestDigestMD5SendsAuthzid(t *testing.T) {
	m := rfcClient()
	m.authzid = "chris"
	got, err := m.respond([]byte(rfcChallenge))
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(string(got), `,qop=auth,authzid="chris"`), string(got))
	assert.NotContains(t, string(got), "d388dad90d4bbd760a152321f2143af7", "authzid changes A1")
	p := digestParams{username: "chris", realm: "elwood.innosoft.com", password: "secret",
		nonce: "OA6MG9tEQGm2hh", cnonce: "OA6MHXh6VqTrRk", nc: "00000001", qop: "auth",
		digestURI: "imap/elwood.innosoft.com", authzid: "chris"}
	assert.Contains(t, string(got), "response="+p.value("AUTHENTICATE")+",")
	assert.NoError(t, m.verify([]byte("rspauth="+p.value(""))))
}

// What the Java server (DigestMD5Server for ZooKeeper) sends, answered with a new cnonce
// each time, and the user name and password hashed in ISO 8859-1 where they fit.
func TestDigestMD5AnswersZooKeeperChallenge(t *testing.T) {
	ch := `realm="zk-sasl-md5",nonce="gb+fPlF1fV5pL/HZ0vbx5Rr0lt8ZG1/K3vAvH6Zi",charset=utf-8,algorithm=md5-sess`
	m := &digestMD5{username: "bøb", password: "sécret", authzid: "bøb", digestURI: saslDigestURI}
	got, err := m.respond([]byte(ch))
	require.NoError(t, err)
	dirs, err := parseDirectives(got)
	require.NoError(t, err)
	vals := map[string]string{}
	for _, d := range dirs {
		vals[d.key] = d.value
	}
	assert.Equal(t, "bøb", vals["username"], "sent in UTF-8 after charset=utf-8")
	assert.Equal(t, "zk-sasl-md5", vals["realm"])
	assert.Equal(t, "zookeeper/zk-sasl-md5", vals["digest-uri"])
	assert.Equal(t, "00000001", vals["nc"])
	assert.Equal(t, "auth", vals["qop"])
	assert.Equal(t, "bøb", vals["authzid"])
	assert.GreaterOrEqual(t, len(vals["cnonce"]), 16)
	p := digestParams{username: "b\xf8b", realm: "zk-sasl-md5", password: "s\xe9cret",
		nonce: "gb+fPlF1fV5pL/HZ0vbx5Rr0lt8ZG1/K3vAvH6Zi", cnonce: vals["cnonce"], nc: "00000001", qop: "auth",
		digestURI: "zookeeper/zk-sasl-md5", authzid: "b\xf8b"}
	assert.Equal(t, p.value("AUTHENTICATE"), vals["response"])

	other := &digestMD5{username: "bob", password: "x", digestURI: saslDigestURI}
	_, err = other.respond([]byte(ch))
	require.NoError(t, err)
	assert.NotEqual(t, m.cnonce, other.cnonce, "a new cnonce each time")
}

func TestDigestMD5RefusesChallengeItCannotAnswer(t *testing.T) {
	for _, tc := range []struct{ name, challenge string }{
		{"no nonce", `realm="r",qop="auth",algorithm=md5-sess`},
		{"empty nonce", `nonce="",algorithm=md5-sess`},
		{"no algorithm", `nonce="n"`},
		{"md5", `nonce="n",algorithm=md5`},
		{"two nonces", `nonce="n",nonce="m",algorithm=md5-sess`},
		{"two algorithms", `nonce="n",algorithm=md5-sess,algorithm=md5-sess`},
		{"charset", `nonce="n",algorithm=md5-sess,charset=iso-8859-1`},
		{"no qop auth", `nonce="n",algorithm=md5-sess,qop="auth-int,auth-conf"`},
		{"not directives", `hello`},
		{"empty", ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := (&digestMD5{username: "u", password: "p", digestURI: saslDigestURI}).respond([]byte(tc.challenge))
			assert.ErrorIs(t, err, ErrMalformed)
		})
	}
	// Without charset=utf-8 the strings go in ISO 8859-1: one beyond it cannot go.
	_, err := (&digestMD5{username: "ユーザー", password: "p", digestURI: saslDigestURI}).respond([]byte(`nonce="n",algorithm=md5-sess`))
	assert.Error(t, err)
	assert.False(t, errors.Is(err, ErrMalformed), "the challenge is fine: %v", err)
}

func TestParseDigestChallenge(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     digestChallenge
	}{
		{"rfc", rfcChallenge, digestChallenge{realms: []string{"elwood.innosoft.com"}, nonce: "OA6MG9tEQGm2hh",
			qop: []string{"auth"}, utf8: true, algorithm: "md5-sess"}},
		{"escapes", `nonce="a\"b\\c\d",algorithm=md5-sess`, digestChallenge{nonce: `a"b\cd`, qop: []string{"auth"}, algorithm: "md5-sess"}},
		{"lws and empty elements", " ,\tNonce = \"n\" ,, ALGORITHM=md5-sess ,\r\n qop=\" auth-int , auth \",",
			digestChallenge{nonce: "n", qop: []string{"auth-int", "auth"}, algorithm: "md5-sess"}},
		{"realms", `realm="a",realm="b",nonce=n,algorithm=md5-sess`, digestChallenge{realms: []string{"a", "b"}, nonce: "n",
			qop: []string{"auth"}, algorithm: "md5-sess"}},
		{"unknown directives", `nonce=n,algorithm=md5-sess,x-thing="v,=\"",y=z,maxbuf=1024,stale=true`,
			digestChallenge{nonce: "n", qop: []string{"auth"}, algorithm: "md5-sess"}},
		{"quoted token values", `nonce="n",algorithm="md5-sess",charset="UTF-8"`, digestChallenge{nonce: "n", qop: []string{"auth"}, utf8: true, algorithm: "md5-sess"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseDigestChallenge([]byte(tc.in))
			require.NoError(t, err)
			assert.Equal(t, tc.want, *got)
		})
	}
}

func TestParseDirectivesRefusesHostileInput(t *testing.T) {
	for _, in := range []string{
		`nonce`, `nonce=`, `nonce =  `, `=x`, `nonce="abc`, `nonce="abc\`, `nonce="a"b`, `nonce=a b`,
		`nonce=a;b=c`, `"x"=y`, "non\x00ce=a", `nonce=,a=b`, `nonce=(x)`, `a=b c=d`,
		"nonce=\"x\"" + strings.Repeat(" ", maxDigestChallenge),
	} {
		_, err := parseDirectives([]byte(in))
		assert.ErrorIs(t, err, ErrMalformed, "%q", in)
	}
	dirs, err := parseDirectives([]byte("nonce=\"\xff\x00\xc3\"")) // bytes as they come inside quotes
	require.NoError(t, err)
	assert.Equal(t, []directive{{"nonce", "\xff\x00\xc3"}}, dirs)
}

func TestQuoteRoundTrips(t *testing.T) {
	for _, s := range []string{"", `a"b`, `\`, `\"`, "plain", "ü\"\\x"} {
		dirs, err := parseDirectives([]byte("k=" + quote(s)))
		require.NoError(t, err)
		require.Len(t, dirs, 1)
		assert.Equal(t, s, dirs[0].value)
	}
}

// Whatever the server sends, the parser and the response never panic; a challenge that
// parses gets a response that parses, carrying its nonce back.
func FuzzParseDigestChallenge(f *testing.F) {
	for _, s := range []string{rfcChallenge, `nonce="a\"b",algorithm=md5-sess`, `realm="a",realm="b",nonce=n,algorithm=md5-sess,qop="auth-conf,auth"`,
		`nonce="`, `,,,`, `x=y`, rfcRspauth} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ch, err := parseDigestChallenge(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not wrapping ErrMalformed: %v", err)
			}
			return
		}
		m := &digestMD5{username: "u", password: "p", authzid: "u", digestURI: saslDigestURI}
		resp, err := m.respond(b)
		if err != nil {
			return // no qop auth, or a realm beyond ISO 8859-1 without charset=utf-8
		}
		dirs, err := parseDirectives(resp)
		if err != nil {
			t.Fatalf("response %q does not parse: %v", resp, err)
		}
		for _, d := range dirs {
			if d.key == "nonce" && d.value != ch.nonce {
				t.Fatalf("nonce %q sent back as %q", ch.nonce, d.value)
			}
		}
	})
}

// Without charset=utf-8 the server's realm is ISO 8859-1: hashed and sent back as its
// bytes are.
func TestDigestMD5KeepsLatin1Realm(t *testing.T) {
	m := &digestMD5{username: "u", password: "p", digestURI: saslDigestURI, cnonce: "c"}
	got, err := m.respond([]byte("realm=\"r\xe9alm\",nonce=n,algorithm=md5-sess"))
	require.NoError(t, err)
	assert.Contains(t, string(got), "realm=\"r\xe9alm\"")
	p := digestParams{username: "u", realm: "r\xe9alm", password: "p", nonce: "n", cnonce: "c", nc: "00000001",
		qop: "auth", digestURI: saslDigestURI}
	assert.Contains(t, string(got), "response="+p.value("AUTHENTICATE"))
}

// saslReply is what saslPeer answers a SASL packet with.
type saslReply struct {
	xid   int32 // 0: the request's
	code  int32
	token []byte
}

// saslPeer answers the SASL packets it reads from nc: answer gets each packet's token
// and returns the reply, or nil to answer nothing more (the peer then holds the
// connection until the test ends).
func saslPeer(t *testing.T, nc net.Conn, answer func(n int, token []byte) *saslReply) {
	t.Helper()
	done := make(chan struct{})
	t.Cleanup(func() { nc.Close(); <-done })
	go func() {
		defer close(done)
		for n := 0; ; n++ {
			body, err := readFrame(nc, DefaultMaxFrame)
			if err != nil {
				return
			}
			d := &decoder{b: body}
			xid, op := d.int32("xid"), d.int32("op")
			token := d.buffer("token")
			if op != opSASL || d.err != nil {
				return
			}
			r := answer(n, token)
			if r == nil {
				_, _ = io.Copy(io.Discard, nc)
				return
			}
			if r.xid == 0 {
				r.xid = xid
			}
			f := newFrame()
			f.int32(r.xid)
			f.int64(0)
			f.int32(r.code)
			f.buffer(r.token)
			if _, err := nc.Write(f.finish()); err != nil {
				return
			}
		}
	}()
}

// zkChallenge is a challenge as ZooKeeper's server sends it.
const zkChallenge = `realm="zk-sasl-md5",nonce="fN9w\"q",charset=utf-8,algorithm=md5-sess`

// rspauthFor is the rspauth a server that knows password sends for the client's
// digest-response.
func rspauthFor(t *testing.T, resp []byte, password string) []byte {
	dirs, err := parseDirectives(resp)
	require.NoError(t, err)
	v := map[string]string{}
	for _, d := range dirs {
		v[d.key] = d.value
	}
	p := digestParams{username: v["username"], realm: v["realm"], password: password, nonce: v["nonce"],
		cnonce: v["cnonce"], nc: v["nc"], qop: v["qop"], digestURI: v["digest-uri"], authzid: v["authzid"]}
	return []byte("rspauth=" + p.value(""))
}

// The exchange's outcomes, each with the error a caller can tell it by.
func TestAuthenticateSASLOutcomes(t *testing.T) {
	cred := &SASLDigest{Username: "bob", Password: "bobsecret"}
	challenge := func(n int, tok []byte) *saslReply { return &saslReply{token: []byte(zkChallenge)} }
	for _, tc := range []struct {
		name   string
		answer func(t *testing.T, n int, tok []byte) *saslReply
		want   error // nil: success
	}{
		{"accepted", func(t *testing.T, n int, tok []byte) *saslReply {
			if n == 0 {
				assert.Empty(t, tok, "DIGEST-MD5 starts with an empty token")
				return challenge(n, tok)
			}
			assert.Contains(t, string(tok), `nonce="fN9w\"q"`, "the nonce quoted again")
			assert.Contains(t, string(tok), `digest-uri="zookeeper/zk-sasl-md5"`)
			return &saslReply{token: rspauthFor(t, tok, "bobsecret")}
		}, nil},
		{"refused", func(t *testing.T, n int, tok []byte) *saslReply {
			if n == 0 {
				return challenge(n, tok)
			}
			return &saslReply{code: -115}
		}, zk.ErrAuthFailed},
		{"refused as SASL is required", func(t *testing.T, n int, tok []byte) *saslReply {
			if n == 0 {
				return challenge(n, tok)
			}
			return &saslReply{code: -124}
		}, zk.ErrAuthFailed},
		{"server without SASL", func(t *testing.T, n int, tok []byte) *saslReply { return &saslReply{} }, zk.ErrAuthFailed},
		{"rspauth of another password", func(t *testing.T, n int, tok []byte) *saslReply {
			if n == 0 {
				return challenge(n, tok)
			}
			return &saslReply{token: rspauthFor(t, tok, "other")}
		}, zk.ErrAuthFailed},
		{"no rspauth", func(t *testing.T, n int, tok []byte) *saslReply {
			if n == 0 {
				return challenge(n, tok)
			}
			return &saslReply{token: []byte(`realm="x"`)}
		}, ErrMalformed},
		{"challenge without nonce", func(t *testing.T, n int, tok []byte) *saslReply {
			return &saslReply{token: []byte(`realm="zk-sasl-md5",algorithm=md5-sess`)}
		}, ErrMalformed},
		{"hostile challenge", func(t *testing.T, n int, tok []byte) *saslReply {
			return &saslReply{token: []byte(`nonce="\`)}
		}, ErrMalformed},
		{"oversized challenge", func(t *testing.T, n int, tok []byte) *saslReply {
			return &saslReply{token: []byte(`nonce=n,algorithm=md5-sess,x="` + strings.Repeat("a", 4000) + `"`)}
		}, ErrMalformed},
		{"reply of another xid", func(t *testing.T, n int, tok []byte) *saslReply {
			return &saslReply{xid: 7, token: []byte(zkChallenge)}
		}, ErrMalformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client, server := net.Pipe()
			defer client.Close()
			saslPeer(t, server, func(n int, tok []byte) *saslReply { return tc.answer(t, n, tok) })
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			xid, err := authenticateSASL(ctx, client, cred, DefaultMaxFrame)
			if tc.want == nil {
				require.NoError(t, err)
				assert.Equal(t, int32(2), xid, "two ordinary xids taken")
				return
			}
			assert.ErrorIs(t, err, tc.want)
		})
	}
}

// A server that never answers: the exchange ends with ctx, cancelled or at its deadline.
func TestAuthenticateSASLEndsWithContext(t *testing.T) {
	cred := &SASLDigest{Username: "bob", Password: "bobsecret"}
	for _, deadline := range []bool{false, true} {
		client, server := net.Pipe()
		saslPeer(t, server, func(n int, tok []byte) *saslReply { return nil })
		ctx, cancel := context.WithCancel(context.Background())
		want := context.Canceled
		if deadline {
			ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
			want = context.DeadlineExceeded
		} else {
			time.AfterFunc(50*time.Millisecond, cancel)
		}
		_, err := authenticateSASL(ctx, client, cred, DefaultMaxFrame)
		assert.ErrorIs(t, err, want)
		cancel()
		client.Close()
	}
}
