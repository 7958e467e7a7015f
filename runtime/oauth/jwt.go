package oauth

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/kilnmcp/kiln/runtime/config"
)

// clientAssertion signs the RFC 7523 client authentication JWT: iss and
// sub are the client ID, aud the authorization server's issuer, valid for
// five minutes, with a random jti so a server can refuse replays.
func clientAssertion(a *config.Auth, audience string, now time.Time) (string, error) {
	key, err := parsePrivateKey(a.PrivateKey)
	if err != nil {
		return "", err
	}
	alg := a.SigningAlg
	if alg == "" {
		alg = "ES256"
		if _, ok := key.(*rsa.PrivateKey); ok {
			alg = "RS256"
		}
	}
	jti := make([]byte, 16)
	_, _ = rand.Read(jti)
	header, _ := json.Marshal(map[string]string{"alg": alg, "typ": "JWT"})
	claims, _ := json.Marshal(map[string]any{
		"iss": a.ClientID, "sub": a.ClientID, "aud": audience,
		"iat": now.Unix(), "exp": now.Add(5 * time.Minute).Unix(),
		"jti": base64.RawURLEncoding.EncodeToString(jti),
	})
	enc := base64.RawURLEncoding
	input := enc.EncodeToString(header) + "." + enc.EncodeToString(claims)
	sum := sha256.Sum256([]byte(input))
	var sig []byte
	switch alg {
	case "ES256":
		k, ok := key.(*ecdsa.PrivateKey)
		if !ok {
			return "", errors.New("auth.signing_alg ES256 needs an EC P-256 private key")
		}
		r, s, err := ecdsa.Sign(rand.Reader, k, sum[:])
		if err != nil {
			return "", err
		}
		sig = append(pad32(r), pad32(s)...)
	case "RS256":
		k, ok := key.(*rsa.PrivateKey)
		if !ok {
			return "", errors.New("auth.signing_alg RS256 needs an RSA private key")
		}
		if sig, err = rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:]); err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("auth.signing_alg %q is not supported; use ES256 or RS256", alg)
	}
	return input + "." + enc.EncodeToString(sig), nil
}

func pad32(n *big.Int) []byte {
	b := make([]byte, 32)
	return n.FillBytes(b)
}

func parsePrivateKey(p string) (any, error) {
	block, _ := pem.Decode([]byte(p))
	if block == nil {
		return nil, errors.New("auth.private_key is not a PEM block")
	}
	if k, err := x509.ParsePKCS8PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParseECPrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	if k, err := x509.ParsePKCS1PrivateKey(block.Bytes); err == nil {
		return k, nil
	}
	return nil, errors.New("auth.private_key holds no PKCS#8, EC or PKCS#1 private key")
}
