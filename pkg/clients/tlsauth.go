package clients

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lestrrat-go/jwx/v3/jwk"
)

// The mutual-TLS client authentication methods (RFC 8705 section 2).
const (
	// AuthTLSClient is tls_client_auth (section 2.1): a certificate that
	// chains to a certificate authority the operator trusts (--client-ca)
	// and whose subject DN, or one SAN, is the one registered.
	AuthTLSClient = "tls_client_auth"
	// AuthSelfSignedTLSClient is self_signed_tls_client_auth (section
	// 2.2): a certificate, self-signed or not (its chain is not checked),
	// whose public key is one of the client's registered keys (a JWK set
	// or a jwks_uri).
	AuthSelfSignedTLSClient = "self_signed_tls_client_auth"
)

// AuthMethods lists every client authentication method, in the order the
// metadata names them (token_endpoint_auth_methods_supported; the secret
// method is client_secret_basic and client_secret_post there).
var AuthMethods = []string{AuthClientSecret, AuthPrivateKeyJWT, AuthTLSClient, AuthSelfSignedTLSClient}

// TLS subject kinds: the registration parameters of a tls_client_auth
// client (RFC 8705 section 2.1.2), of which a client registers exactly one.
const (
	SubjectDN       = "tls_client_auth_subject_dn"
	SubjectSANDNS   = "tls_client_auth_san_dns"
	SubjectSANURI   = "tls_client_auth_san_uri"
	SubjectSANIP    = "tls_client_auth_san_ip"
	SubjectSANEmail = "tls_client_auth_san_email"
)

// SubjectKinds lists the TLS subject kinds, in RFC 8705's order.
var SubjectKinds = []string{SubjectDN, SubjectSANDNS, SubjectSANURI, SubjectSANIP, SubjectSANEmail}

// maxSubjectBytes bounds a registered subject value.
const maxSubjectBytes = 1024

// TLSSubject is the certificate name a tls_client_auth client registered:
// its Kind (one of SubjectKinds) and Value (an RFC 4514 DN, a DNS name, a
// URI, an IP address or an e-mail address).
type TLSSubject struct {
	Kind  string
	Value string
}

// problems reports what is wrong with s, each naming its parameter.
func (s TLSSubject) problems() []string {
	name := s.Kind
	v := s.Value
	switch {
	case !slices.Contains(SubjectKinds, s.Kind):
		return []string{fmt.Sprintf("tls subject %q: must be one of %s", s.Kind, strings.Join(SubjectKinds, ", "))}
	case v == "" || len(v) > maxSubjectBytes || !utf8.ValidString(v):
		return []string{fmt.Sprintf("%s: 1-%d bytes of UTF-8 required", name, maxSubjectBytes)}
	case strings.ContainsFunc(v, unsafeInText):
		return []string{fmt.Sprintf("%s: control and bidirectional formatting characters are not allowed", name)}
	}
	switch s.Kind {
	case SubjectDN:
		if _, err := parseDN(v); err != nil {
			return []string{fmt.Sprintf("%s %q: not an RFC 4514 distinguished name (%v), e.g. \"CN=client.example.com,O=Example Hospital,C=NL\"", name, v, err)}
		}
	case SubjectSANDNS:
		if !validDNSName(v) {
			return []string{fmt.Sprintf("%s %q: not a DNS name (letters, digits, hyphens and dots; no wildcard)", name, v)}
		}
	case SubjectSANURI:
		if u, err := url.Parse(v); err != nil || u.Scheme == "" || !u.IsAbs() {
			return []string{fmt.Sprintf("%s %q: not an absolute URI", name, v)}
		}
	case SubjectSANIP:
		if a, err := netip.ParseAddr(v); err != nil || a.Zone() != "" {
			return []string{fmt.Sprintf("%s %q: not an IPv4 or IPv6 address", name, v)}
		}
	case SubjectSANEmail:
		if at := strings.LastIndexByte(v, '@'); at < 1 || at == len(v)-1 || strings.ContainsAny(v, " \t<>") {
			return []string{fmt.Sprintf("%s %q: not an e-mail address", name, v)}
		}
	}
	return nil
}

// validDNSName reports a DNS name of labels of letters, digits and inner
// hyphens (RFC 1123 section 2.1), at most 253 bytes, a trailing dot
// excepted; no wildcard: a client's certificate names the client.
func validDNSName(s string) bool {
	s = strings.TrimSuffix(s, ".")
	if s == "" || len(s) > 253 {
		return false
	}
	for label := range strings.SplitSeq(s, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range []byte(label) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// blob is what Redis keeps of a tls_client_auth client's subject (its
// keysKey): {"<kind>": "<value>"}, the registration parameter as RFC
// 8705 names it.
func (s TLSSubject) blob() ([]byte, error) { return json.Marshal(map[string]string{s.Kind: s.Value}) }

// subjectFrom reads a stored subject blob; false when it is none.
func subjectFrom(raw []byte) (TLSSubject, bool) {
	var m map[string]string
	if json.Unmarshal(raw, &m) != nil || len(m) != 1 {
		return TLSSubject{}, false
	}
	for k, v := range m {
		if slices.Contains(SubjectKinds, k) {
			return TLSSubject{Kind: k, Value: v}, true
		}
	}
	return TLSSubject{}, false
}

// Matches reports whether cert names the subject s (RFC 8705 section
// 2.1.2): its subject DN equal to s's (attribute types by OID, values
// compared ignoring case and repeated spaces, RFC 4517 caseIgnoreMatch),
// or one of its SANs of s's kind equal to s's value (DNS names and e-mail
// addresses ignoring case, URIs exactly, IP addresses as addresses).
// Whether cert chains to a trusted authority is VerifyChain's question.
func (s TLSSubject) Matches(cert *x509.Certificate) bool {
	switch s.Kind {
	case SubjectDN:
		want, err := parseDN(s.Value)
		if err != nil {
			return false
		}
		var seq pkix.RDNSequence
		if rest, err := asn1.Unmarshal(cert.RawSubject, &seq); err != nil || len(rest) != 0 {
			return false
		}
		return canonicalDN(want) == canonicalDN(reverseRDNs(seq))
	case SubjectSANDNS:
		want := strings.TrimSuffix(s.Value, ".")
		return slices.ContainsFunc(cert.DNSNames, func(n string) bool { return strings.EqualFold(strings.TrimSuffix(n, "."), want) })
	case SubjectSANURI:
		return slices.ContainsFunc(cert.URIs, func(u *url.URL) bool { return u.String() == s.Value })
	case SubjectSANIP:
		want, err := netip.ParseAddr(s.Value)
		if err != nil {
			return false
		}
		return slices.ContainsFunc(cert.IPAddresses, func(ip net.IP) bool {
			a, ok := netip.AddrFromSlice(ip)
			return ok && a.Unmap() == want.Unmap()
		})
	case SubjectSANEmail:
		return slices.ContainsFunc(cert.EmailAddresses, func(e string) bool { return strings.EqualFold(e, s.Value) })
	}
	return false
}

// VerifyChain checks a tls_client_auth certificate (RFC 8705 section 2.1):
// it chains, through the intermediates the client sent, to one of roots
// (the operator's --client-ca), is valid at now and may authenticate a
// TLS client (extended key usage clientAuth or any). The TLS handshake
// proved the client holds its key.
func VerifyChain(chain []*x509.Certificate, roots *x509.CertPool, now time.Time) error {
	if len(chain) == 0 || roots == nil {
		return fmt.Errorf("no certificate, or no client CA configured")
	}
	inter := x509.NewCertPool()
	for _, c := range chain[1:] {
		inter.AddCert(c)
	}
	_, err := chain[0].Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return err
}

// KeyRegistered reports whether cert's public key is one of set's keys
// (self_signed_tls_client_auth, RFC 8705 section 2.2): compared by their
// RFC 7638 thumbprints, so a key registered as a bare JWK or with an
// "x5c" matches alike.
func KeyRegistered(cert *x509.Certificate, set jwk.Set) bool {
	if set == nil {
		return false
	}
	key, err := jwk.Import(cert.PublicKey)
	if err != nil {
		return false
	}
	want, err := key.Thumbprint(crypto.SHA256)
	if err != nil {
		return false
	}
	for i := range set.Len() {
		k, _ := set.Key(i)
		if len(KeyAlgorithms(k)) == 0 {
			continue // a key this service does not accept (keysize)
		}
		if tp, err := k.Thumbprint(crypto.SHA256); err == nil && bytes.Equal(tp, want) {
			return true
		}
	}
	return false
}

// attribute type names of RFC 4514 section 3, and the few more that
// client certificates carry.
var dnNames = map[string]string{
	"CN": "2.5.4.3", "L": "2.5.4.7", "ST": "2.5.4.8", "O": "2.5.4.10", "OU": "2.5.4.11", "C": "2.5.4.6",
	"STREET": "2.5.4.9", "DC": "0.9.2342.19200300.100.1.25", "UID": "0.9.2342.19200300.100.1.1",
	"SERIALNUMBER": "2.5.4.5", "EMAILADDRESS": "1.2.840.113549.1.9.1", "E": "1.2.840.113549.1.9.1",
	"ORGANIZATIONIDENTIFIER": "2.5.4.97", "TITLE": "2.5.4.12", "GN": "2.5.4.42", "SN": "2.5.4.4",
}

// dnAttr is one attribute of a relative distinguished name.
type dnAttr struct{ oid, value string }

// parseDN reads an RFC 4514 distinguished name: RDNs separated by ",",
// attributes of one RDN by "+", each type=value, the type a name of
// dnNames (any case) or a dotted OID, the value a string with RFC 4514
// escapes (a backslash and a special character, or two hex digits) or
// "#" and the hex of a BER value. The RDNs stay in the string's order
// (the most specific first).
func parseDN(s string) ([][]dnAttr, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty")
	}
	var rdns [][]dnAttr
	var rdn []dnAttr
	i := 0
	for {
		// type
		j := strings.IndexByte(s[i:], '=')
		if j < 0 {
			return nil, fmt.Errorf("an attribute without \"=\"")
		}
		typ := strings.TrimSpace(s[i : i+j])
		oid, ok := dnNames[strings.ToUpper(typ)]
		if !ok {
			if _, err := parseOID(typ); err != nil {
				return nil, fmt.Errorf("unknown attribute type %q", typ)
			}
			oid = typ
		}
		i += j + 1
		// value
		var val strings.Builder
		for i < len(s) && s[i] == ' ' {
			i++
		}
		hexForm := i < len(s) && s[i] == '#'
		end := byte(0)
		for i < len(s) {
			c := s[i]
			if c == ',' || c == '+' {
				end = c
				i++
				break
			}
			if c == '\\' {
				if i+1 >= len(s) {
					return nil, fmt.Errorf("a trailing backslash")
				}
				if n := s[i+1]; strings.IndexByte(` "#+,;<=>\`, n) >= 0 {
					val.WriteByte(n)
					i += 2
					continue
				}
				if i+2 >= len(s) {
					return nil, fmt.Errorf("a bad escape")
				}
				b, err := hex.DecodeString(s[i+1 : i+3])
				if err != nil {
					return nil, fmt.Errorf("a bad escape")
				}
				val.Write(b)
				i += 3
				continue
			}
			val.WriteByte(c)
			i++
		}
		v := strings.TrimRight(val.String(), " ")
		if hexForm {
			raw, err := hex.DecodeString(v[1:])
			if err != nil {
				return nil, fmt.Errorf("a bad #hex value")
			}
			var rv asn1.RawValue
			if _, err := asn1.Unmarshal(raw, &rv); err != nil {
				return nil, fmt.Errorf("a bad #hex value")
			}
			v = string(rv.Bytes)
		}
		if v == "" {
			return nil, fmt.Errorf("attribute %s has no value", typ)
		}
		rdn = append(rdn, dnAttr{oid: oid, value: v})
		if end != '+' {
			rdns = append(rdns, rdn)
			rdn = nil
		}
		if end == 0 {
			break
		}
	}
	return rdns, nil
}

func parseOID(s string) (asn1.ObjectIdentifier, error) {
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return nil, fmt.Errorf("not an OID")
	}
	oid := make(asn1.ObjectIdentifier, len(parts))
	for i, p := range parts {
		n := 0
		if p == "" || len(p) > 9 {
			return nil, fmt.Errorf("not an OID")
		}
		for _, c := range []byte(p) {
			if c < '0' || c > '9' {
				return nil, fmt.Errorf("not an OID")
			}
			n = n*10 + int(c-'0')
		}
		oid[i] = n
	}
	return oid, nil
}

// reverseRDNs turns a certificate's RDN sequence (the least specific
// first) into the order of an RFC 4514 string (the most specific first).
func reverseRDNs(seq pkix.RDNSequence) [][]dnAttr {
	out := make([][]dnAttr, 0, len(seq))
	for i := len(seq) - 1; i >= 0; i-- {
		var rdn []dnAttr
		for _, atv := range seq[i] {
			v, ok := atv.Value.(string)
			if !ok {
				v = fmt.Sprint(atv.Value)
			}
			rdn = append(rdn, dnAttr{oid: atv.Type.String(), value: v})
		}
		out = append(out, rdn)
	}
	return out
}

// canonicalDN is the one spelling of a DN for comparison: each RDN's
// attributes sorted, values in lower case with runs of spaces made one
// (RFC 4517 section 4.2.11, caseIgnoreMatch, as most attribute types
// match).
func canonicalDN(rdns [][]dnAttr) string {
	var b strings.Builder
	for _, rdn := range rdns {
		parts := make([]string, len(rdn))
		for i, a := range rdn {
			parts[i] = a.oid + "=" + strings.Join(strings.Fields(strings.ToLower(a.value)), " ")
		}
		slices.Sort(parts)
		b.WriteString(strings.Join(parts, "\x00+"))
		b.WriteString("\x00,")
	}
	return b.String()
}
