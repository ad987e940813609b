package sdk

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/partnerapi/authplatform/pkg/partnerclient"
)

// webCryptoSign is what oauth4webapi (and the authentication guide's
// snippet) does with key.pem on Node.js: import it as PKCS #8 with
// WebCrypto and sign a JWS, here without kid. KEY_FILE, ALG, CLAIMS in the
// environment; the compact JWS on stdout.
const webCryptoSign = `
const { readFileSync } = require('node:fs')
;(async () => {
  const der = Buffer.from(readFileSync(process.env.KEY_FILE, 'utf8').replace(/-----[A-Z ]+-----|\s/g, ''), 'base64')
  const algs = {
    ES256: [{ name: 'ECDSA', namedCurve: 'P-256' }, { name: 'ECDSA', hash: 'SHA-256' }],
    EdDSA: [{ name: 'Ed25519' }, { name: 'Ed25519' }],
  }
  const [imp, sig] = algs[process.env.ALG]
  const key = await crypto.subtle.importKey('pkcs8', der, imp, false, ['sign'])
  const b64 = (b) => Buffer.from(b).toString('base64url')
  const input = b64(JSON.stringify({ alg: process.env.ALG, typ: 'JWT' })) + '.' + b64(process.env.CLAIMS)
  process.stdout.write(input + '.' + b64(await crypto.subtle.sign(sig, key, Buffer.from(input))))
})().catch((err) => { process.stderr.write(String(err)); process.exit(1) })
`

// authlibSign is what Authlib's PrivateKeyJWT signs with key.pem as it
// comes: private_key_jwt_sign without expires_in (exp = iat + 3600), no
// kid. KEY_FILE, ALG, CLIENT_ID, AUD in the environment.
const authlibSign = `
import os, sys
from authlib.oauth2.rfc7523 import private_key_jwt_sign
a = private_key_jwt_sign(open(os.environ["KEY_FILE"]).read(), client_id=os.environ["CLIENT_ID"],
                         token_endpoint=os.environ["AUD"], alg=os.environ["ALG"])
sys.stdout.write(a.decode() if isinstance(a, bytes) else a)
`

// throughClients runs the key a guide's recipe made (keyFile, registered
// for k) through the other documented clients besides the SDK: WebCrypto
// as oauth4webapi uses it (node), and Authlib (Debian's python3); each
// signs an assertion without kid that must get a token. A client that is
// not installed is skipped, outside CI. A SEC 1 copy of an EC key is
// refused by WebCrypto: what the recipe avoids.
func (f *docsFixture) throughClients(where, keyFile string, k *keyClient) {
	f.t.Helper()
	aud := issuer + tokenPath
	token := func(client, assertion string) {
		f.t.Helper()
		form := url.Values{"grant_type": {"client_credentials"}, "client_assertion_type": {partnerclient.ClientAssertionType},
			"client_assertion": {assertion}}
		if r := f.request(http.MethodPost, tokenPath, formType, form.Encode()); r.Status != http.StatusOK {
			f.t.Errorf("%s: a token with %s's assertion signed by key.pem: %d %s", where, client, r.Status, r.Body)
		} else {
			f.t.Logf("%s: key.pem through %s: a token (assertion without kid)", where, client)
		}
	}
	run := func(name string, env []string, args ...string) (string, string, error) {
		cmd := exec.Command(name, args...)
		cmd.Env = append(os.Environ(), env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	alg := k.key.Alg.String()
	if _, err := exec.LookPath("node"); err == nil {
		now := time.Now().Unix()
		claims, _ := json.Marshal(map[string]any{"iss": k.id, "sub": k.id, "aud": aud, "iat": now, "exp": now + 60, "jti": "node-" + where + alg})
		a, stderr, err := run("node", []string{"KEY_FILE=" + keyFile, "ALG=" + alg, "CLAIMS=" + string(claims)}, "-e", webCryptoSign)
		if err != nil {
			f.t.Fatalf("%s: WebCrypto cannot use key.pem: %v %s", where, err, stderr)
		}
		token("WebCrypto", a)
		if priv, ok := k.key.Signer.(*ecdsa.PrivateKey); ok {
			der, _ := x509.MarshalECPrivateKey(priv)
			sec1 := filepath.Join(filepath.Dir(keyFile), "sec1.pem")
			if err := os.WriteFile(sec1, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
				f.t.Fatal(err)
			}
			if _, stderr, err := run("node", []string{"KEY_FILE=" + sec1, "ALG=" + alg, "CLAIMS=" + string(claims)}, "-e", webCryptoSign); err == nil || !strings.Contains(stderr, "DataError") {
				f.t.Errorf("%s: WebCrypto imported a SEC 1 key (%v %s): the guide's warning is wrong", where, err, stderr)
			}
		}
	} else if os.Getenv("CI") == "true" {
		f.t.Fatalf("node is not installed: %v", err)
	}
	if _, _, err := run(debianPython, nil, "-c", "import authlib"); err == nil {
		a, stderr, err := run(debianPython, []string{"KEY_FILE=" + keyFile, "ALG=" + alg, "CLIENT_ID=" + k.id, "AUD=" + aud}, "-c", authlibSign)
		if err != nil {
			f.t.Fatalf("%s: Authlib cannot use key.pem: %v %s", where, err, stderr)
		}
		token("Authlib", a)
	} else if os.Getenv("CI") == "true" {
		f.t.Fatalf("%s has no authlib: %v", debianPython, err)
	}
}

// debianPython is Debian's python3, which has python3-authlib.
const debianPython = "/usr/bin/python3"
