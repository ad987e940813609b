package partnerclient

import (
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
)

// ParsePrivateKeyPEM reads a private key from PEM, as openssl and most
// key tools write it: PKCS #8 ("PRIVATE KEY", what `openssl genpkey`
// writes; RFC 5958), SEC 1 ("EC PRIVATE KEY", `openssl ecparam -genkey`;
// RFC 5915) or PKCS #1 ("RSA PRIVATE KEY", RFC 8017). The key must be one
// the token service accepts: ECDSA on P-256 or P-384, RSA of 2048 bits or
// more, or Ed25519. Encrypted PEM is refused (decrypt it first, e.g.
// `openssl pkey -in enc.pem -out key.pem`), as is a PEM holding no private
// key. Text around the block (openssl's "EC PARAMETERS" block before the
// key, comments) is skipped. Errors never quote the key.
//
// The result has no KeyID: set Config.KeyID to the "kid" of the public key
// registered for it. Its Algorithm is the key type's default (ES256 or
// ES384 by curve, RS256, EdDSA).
//
//	k, err := partnerclient.ParsePrivateKeyPEM(data)
//	cfg.PrivateKey, cfg.Algorithm = k.Key, k.Algorithm
//	cfg.KeyID = os.Getenv("KEY_ID")
func ParsePrivateKeyPEM(data []byte) (*PrivateJWK, error) {
	rest := data
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			return nil, errors.New("partnerclient: no PEM private key (want PRIVATE KEY, EC PRIVATE KEY or RSA PRIVATE KEY)")
		}
		if _, encrypted := block.Headers["DEK-Info"]; encrypted || block.Type == "ENCRYPTED PRIVATE KEY" {
			return nil, errors.New("partnerclient: the PEM private key is encrypted: decrypt it first (openssl pkey -in encrypted.pem -out key.pem)")
		}
		var key any
		var err error
		switch block.Type {
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "PUBLIC KEY", "CERTIFICATE":
			return nil, fmt.Errorf("partnerclient: a PEM %s, not a private key: give the private key (key.pem)", block.Type)
		default:
			continue // EC PARAMETERS and the like
		}
		if err != nil {
			// x509's errors describe the structure, never the key's bytes.
			return nil, fmt.Errorf("partnerclient: PEM %s: %w", block.Type, err)
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("partnerclient: PEM %s holds a %T, which cannot sign", block.Type, key)
		}
		alg := defaultAlgorithm(signer.Public())
		if err := checkAlgorithm(alg, signer.Public()); err != nil {
			return nil, err
		}
		return &PrivateJWK{Key: signer, Algorithm: alg}, nil
	}
}
