package tokenserver

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpop"
)

// Paths of the token service.
const (
	PathToken      = "/api/v1/oauth/token/"
	PathIntrospect = "/api/v1/oauth/introspect/"
	PathRevoke     = "/api/v1/oauth/revoke/"
	PathJWKS       = "/.well-known/jwks.json"
	PathMetadata   = "/.well-known/oauth-authorization-server"
)

// metadata is the authorization server metadata (RFC 8414 section 2).
type metadata struct {
	Issuer                                             string   `json:"issuer"`
	TokenEndpoint                                      string   `json:"token_endpoint"`
	JWKSURI                                            string   `json:"jwks_uri"`
	IntrospectionEndpoint                              string   `json:"introspection_endpoint"`
	RevocationEndpoint                                 string   `json:"revocation_endpoint"`
	GrantTypesSupported                                []string `json:"grant_types_supported"`
	ResponseTypesSupported                             []string `json:"response_types_supported"`
	TokenEndpointAuthMethodsSupported                  []string `json:"token_endpoint_auth_methods_supported"`
	TokenEndpointAuthSigningAlgValuesSupported         []string `json:"token_endpoint_auth_signing_alg_values_supported"`
	IntrospectionEndpointAuthMethodsSupported          []string `json:"introspection_endpoint_auth_methods_supported"`
	IntrospectionEndpointAuthSigningAlgValuesSupported []string `json:"introspection_endpoint_auth_signing_alg_values_supported"`
	RevocationEndpointAuthMethodsSupported             []string `json:"revocation_endpoint_auth_methods_supported"`
	RevocationEndpointAuthSigningAlgValuesSupported    []string `json:"revocation_endpoint_auth_signing_alg_values_supported"`
	DPoPSigningAlgValuesSupported                      []string `json:"dpop_signing_alg_values_supported"`
	ScopesSupported                                    []string `json:"scopes_supported"`
	ServiceDocumentation                               string   `json:"service_documentation"`
	// RFC 8705 section 3.3, with Config.MTLS only.
	TLSClientCertificateBoundAccessTokens bool `json:"tls_client_certificate_bound_access_tokens,omitempty"`
	// RFC 8705 section 5, with Config.MTLSBaseURL only.
	MTLSEndpointAliases *mtlsAliases `json:"mtls_endpoint_aliases,omitempty"`
}

// mtlsAliases are the endpoints a client using mutual TLS calls instead
// (RFC 8705 section 5).
type mtlsAliases struct {
	TokenEndpoint         string `json:"token_endpoint"`
	IntrospectionEndpoint string `json:"introspection_endpoint"`
	RevocationEndpoint    string `json:"revocation_endpoint"`
}

func buildMetadata(cfg Config) ([]byte, error) {
	issuer := cfg.Issuer
	base := strings.TrimSuffix(issuer, "/")
	// RFC 8414 section 2 and RFC 7523 section 2.2 (private_key_jwt);
	// revocation_endpoint of RFC 7009, named in RFC 8414 section 2; the
	// mutual-TLS methods of RFC 8705 sections 2.1.1 and 2.2.1.
	auth := []string{"client_secret_basic", "client_secret_post", clients.AuthPrivateKeyJWT}
	if cfg.MTLS {
		auth = append(auth, clients.AuthTLSClient, clients.AuthSelfSignedTLSClient)
	}
	algs := clients.AssertionAlgorithms
	var aliases *mtlsAliases
	if m := strings.TrimSuffix(cfg.MTLSBaseURL, "/"); m != "" {
		aliases = &mtlsAliases{TokenEndpoint: m + PathToken, IntrospectionEndpoint: m + PathIntrospect, RevocationEndpoint: m + PathRevoke}
	}
	data, err := json.Marshal(metadata{
		TLSClientCertificateBoundAccessTokens:      cfg.MTLS,
		MTLSEndpointAliases:                        aliases,
		Issuer:                                     issuer,
		TokenEndpoint:                              base + PathToken,
		JWKSURI:                                    base + PathJWKS,
		IntrospectionEndpoint:                      base + PathIntrospect,
		RevocationEndpoint:                         base + PathRevoke,
		GrantTypesSupported:                        []string{"client_credentials"},
		ResponseTypesSupported:                     []string{},
		TokenEndpointAuthMethodsSupported:          auth,
		TokenEndpointAuthSigningAlgValuesSupported: algs,
		IntrospectionEndpointAuthMethodsSupported:  auth,
		IntrospectionEndpointAuthSigningAlgValuesSupported: algs,
		RevocationEndpointAuthMethodsSupported:             auth,
		RevocationEndpointAuthSigningAlgValuesSupported:    algs,
		// RFC 9449 section 5.1.
		DPoPSigningAlgValuesSupported: dpop.Algorithms,
		ScopesSupported:               clients.AllScopes,
		ServiceDocumentation:          base + "/llms.txt",
	})
	if err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	return data, nil
}

// publicDocument serves a fixed JSON document that caches may keep.
func publicDocument(body []byte) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Cache-Control", "public, max-age=300")
		answers.Write(w, http.StatusOK, nil, json.RawMessage(body))
	}
}
