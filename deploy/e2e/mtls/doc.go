// Package mtls is the end-to-end suite of mutual TLS (RFC 8705) on the
// real binaries: tls_client_auth clients authenticating with a certificate
// of a test CA, tokens bound to it (cnf.x5t#S256), and a stolen bound
// token refused over another certificate and over a connection without
// one while its owner keeps working, both where the servers end TLS
// themselves (--tls-cert, --client-ca) and behind the edge (deploy/
// Caddyfile's mutual-TLS site, client_auth mode request, passing the
// certificate in Client-Cert to servers that trust it from the edge
// only). The clients are the real ones: curl --cert/--key,
// golang.org/x/oauth2/clientcredentials over an http.Client presenting a
// certificate, the partner SDK (pkg/partnerclient, Config.Certificate),
// and Authlib's requests session with requests' cert= (python/client.py,
// Debian's /usr/bin/python3 with python3-authlib).
//
// Every certificate and key is made by the test (pkg/clientcert/
// clientcerttest) and written to its temporary directory only. The suite
// needs Redis, caddy and curl.
package mtls
