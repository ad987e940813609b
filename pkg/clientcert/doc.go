// Package clientcert reads the client certificate of a request (mutual
// TLS, RFC 8705): the one the TLS connection presented, when the server
// ends TLS itself, or the one the edge verified the client's possession
// of and passed in the Client-Cert header (RFC 9440), believed only from
// the trusted proxies (package clientip). It gives a certificate's
// SHA-256 thumbprint, the x5t#S256 of a certificate-bound token's cnf
// (RFC 8705 section 3.1). The token endpoint (client authentication and
// binding) and package admission (the binding check of both APIs) read
// certificates through it, and through nothing else.
package clientcert
