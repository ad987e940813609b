package adminapi

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	"github.com/partnerapi/authplatform/authserver/operations"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/keywithdrawal"
)

//go:embed openapi.json
var openAPIDocument []byte

// OpenAPI returns the admin API's OpenAPI 3.1 document.
func OpenAPI() []byte { return bytes.Clone(openAPIDocument) }

func (s *Server) handleOpenAPI(context.Context, *http.Request, []byte) (int, any, error) {
	return http.StatusOK, json.RawMessage(openAPIDocument), nil
}

// noBody refuses a body where an operation takes none.
func noBody(body []byte) error {
	if len(body) > 0 {
		return invalid("this operation takes no body")
	}
	return nil
}

type list[T any] struct {
	Items []T `json:"items"`
}

// page is a page of a listing; NextCursor is omitted on the last page.
type page[T any] struct {
	Items      []T    `json:"items"`
	NextCursor string `json:"next_cursor,omitempty"`
}

// pageQuery reads limit (1-500, default 100) and cursor. A cursor is the
// base64url of the last item's id on the page before (nextCursor), and
// must decode to an id of the listing's own form (valid): a cursor the API
// never gave is refused, never answered with an empty page.
func pageQuery(q url.Values, valid func(string) bool) (limit int, cursor string, err error) {
	limit = 100
	if v := q.Get("limit"); v != "" {
		n, perr := strconv.Atoi(v)
		if perr != nil || n < 1 || n > operations.MaxPageSize {
			return 0, "", invalid(fmt.Sprintf("limit must be a whole number from 1 to %d", operations.MaxPageSize))
		}
		limit = n
	}
	if v := q.Get("cursor"); v != "" {
		raw, derr := base64.RawURLEncoding.DecodeString(v)
		if derr != nil || len(raw) == 0 || !valid(string(raw)) {
			return 0, "", errForeignCursor()
		}
		cursor = string(raw)
	}
	return limit, cursor, nil
}

// streamID is the form of a Redis stream entry id (the admin audit's
// cursor).
var streamID = regexp.MustCompile(`^[0-9]{1,20}-[0-9]{1,20}$`)

// errForeignCursor answers a cursor this API did not give.
func errForeignCursor() *problem { return invalid("cursor is not one this API gave") }

func nextCursor(last string) string { return base64.RawURLEncoding.EncodeToString([]byte(last)) }

// org is an organisation as answered, with its URL.
type org struct{ operations.Org }

func (o org) Location() string { return Prefix + "/orgs/" + o.Slug }

func (s *Server) handleListOrgs(ctx context.Context, r *http.Request, _ []byte) (int, any, error) {
	orgs, err := s.deps.Ops.ListOrgs(ctx)
	return http.StatusOK, list[operations.Org]{Items: operations.OrgsOf(orgs)}, err
}

type createOrgRequest struct {
	Slug        string `json:"slug"`
	Name        string `json:"name"`
	Environment string `json:"environment"`
}

func (s *Server) handleCreateOrg(ctx context.Context, r *http.Request, body []byte) (int, any, error) {
	var req createOrgRequest
	if err := decode(body, &req); err != nil {
		return 0, nil, err
	}
	o, err := s.deps.Ops.CreateOrg(ctx, clients.OrgSpec{Slug: req.Slug, Name: req.Name, Environment: req.Environment})
	if err != nil && !errors.Is(err, clients.ErrNotReplicated) {
		return 0, nil, err
	}
	return http.StatusCreated, org{operations.OrgOf(o)}, err
}

func (s *Server) handleGetOrg(ctx context.Context, r *http.Request, _ []byte) (int, any, error) {
	o, err := s.deps.Ops.GetOrg(ctx, r.PathValue("slug"))
	return http.StatusOK, operations.OrgOf(o), err
}

func (s *Server) handleOrgAudit(ctx context.Context, r *http.Request, _ []byte) (int, any, error) {
	entries, err := s.deps.Ops.OrgAudit(ctx, r.PathValue("slug"))
	return http.StatusOK, list[operations.AuditEntry]{Items: operations.AuditEntriesOf(entries)}, err
}

func (s *Server) handleListClients(ctx context.Context, r *http.Request, _ []byte) (int, any, error) {
	q := r.URL.Query()
	limit, after, err := pageQuery(q, clients.ValidClientID)
	if err != nil {
		return 0, nil, err
	}
	p, err := s.deps.Ops.ListClientPage(ctx, q.Get("org"), after, limit)
	if errors.Is(err, clients.ErrUnknownAfter) {
		// Well-formed, but naming no client of this listing: no page of
		// it ended there.
		return 0, nil, errForeignCursor()
	}
	if err != nil {
		return 0, nil, err
	}
	out := page[operations.Client]{Items: operations.ClientsOf(p.Clients)}
	if p.More && len(p.Clients) > 0 {
		out.NextCursor = nextCursor(p.Clients[len(p.Clients)-1].ID)
	}
	return http.StatusOK, out, nil
}

type createClientRequest struct {
	OrgSlug            string   `json:"organization_slug"`
	Name               string   `json:"name"`
	Audience           string   `json:"audience"`
	Scopes             []string `json:"scopes"`
	RateLimitPerMinute *int64   `json:"rate_limit_per_minute"`
	// AuthMethod is clients.AuthClientSecret (the default),
	// clients.AuthPrivateKeyJWT or clients.AuthSelfSignedTLSClient, with
	// keys in JWKS or JWKSURI, or clients.AuthTLSClient, with one subject
	// (RFC 8705 section 2.1.2).
	AuthMethod string `json:"auth_method"`
	keysRequest
	tlsSubjectRequest
	// DPoPBound is the client metadata dpop_bound_access_tokens (RFC 9449
	// section 5.2): the client gets DPoP-bound tokens only.
	DPoPBound bool `json:"dpop_bound_access_tokens"`
}

// keysRequest is a private_key_jwt client's public keys: a JWK set (RFC
// 7517 section 5) or the URL that serves one (RFC 7591 section 2).
type keysRequest struct {
	JWKS    json.RawMessage `json:"jwks"`
	JWKSURI string          `json:"jwks_uri"`
}

func (k keysRequest) given() bool { return len(k.JWKS) > 0 || k.JWKSURI != "" }

// tlsSubjectRequest is a tls_client_auth client's certificate name: one of
// RFC 8705 section 2.1.2's registration parameters.
type tlsSubjectRequest struct {
	SubjectDN string `json:"tls_client_auth_subject_dn"`
	SANDNS    string `json:"tls_client_auth_san_dns"`
	SANURI    string `json:"tls_client_auth_san_uri"`
	SANIP     string `json:"tls_client_auth_san_ip"`
	SANEmail  string `json:"tls_client_auth_san_email"`
}

// subject is the one subject given (nil: none), or the problem of more
// than one.
func (t tlsSubjectRequest) subject() (*clients.TLSSubject, error) {
	var given []clients.TLSSubject
	for i, v := range []string{t.SubjectDN, t.SANDNS, t.SANURI, t.SANIP, t.SANEmail} {
		if v != "" {
			given = append(given, clients.TLSSubject{Kind: clients.SubjectKinds[i], Value: v})
		}
	}
	switch len(given) {
	case 0:
		return nil, nil
	case 1:
		return &given[0], nil
	}
	return nil, invalid(fmt.Sprintf("give one of %s, not %d (RFC 8705 section 2.1.2)", strings.Join(clients.SubjectKinds, ", "), len(given)))
}

// source checks the shape (jwks must be a JSON object); the keys
// themselves are checked by clients.ClientKeySource.Validate, which lists
// every problem.
func (k keysRequest) source(allowHTTP bool) (clients.ClientKeySource, error) {
	src := clients.ClientKeySource{URL: k.JWKSURI, AllowHTTP: allowHTTP}
	if len(k.JWKS) > 0 {
		if k.JWKS[0] != '{' {
			return src, invalid("member \"jwks\" must be a JWK set object ({\"keys\": [...]})")
		}
		src.JWKS = k.JWKS
	}
	return src, nil
}

// clientWithSecret is a created or rotated client, with its URL.
type clientWithSecret struct{ operations.ClientWithSecret }

func (c clientWithSecret) Location() string { return Prefix + "/clients/" + c.ID }

func (s *Server) handleCreateClient(ctx context.Context, r *http.Request, body []byte) (int, any, error) {
	var req createClientRequest
	if err := decode(body, &req); err != nil {
		return 0, nil, err
	}
	spec := clients.ClientSpec{OrgSlug: req.OrgSlug, Name: req.Name, Audience: req.Audience, Scopes: req.Scopes, DPoPBound: req.DPoPBound}
	if req.RateLimitPerMinute != nil {
		if err := operations.CheckLimit("rate_limit_per_minute", *req.RateLimitPerMinute); err != nil {
			return 0, nil, err
		}
		spec.RateLimitPerMinute = *req.RateLimitPerMinute
	}
	sub, err := req.subject()
	if err != nil {
		return 0, nil, err
	}
	switch req.AuthMethod {
	case "", clients.AuthClientSecret:
		if req.given() {
			return 0, nil, invalid("jwks and jwks_uri are for auth_method \"" + clients.AuthPrivateKeyJWT + "\" or \"" + clients.AuthSelfSignedTLSClient + "\"")
		}
		if sub != nil {
			return 0, nil, invalid(sub.Kind + " is for auth_method \"" + clients.AuthTLSClient + "\"")
		}
	case clients.AuthPrivateKeyJWT, clients.AuthSelfSignedTLSClient, clients.AuthTLSClient:
		// The registry lists every problem of the method and what it
		// needs at once (clients.ClientSpec.Validate).
		spec.AuthMethod, spec.TLSSubject = req.AuthMethod, sub
		if req.given() {
			src, err := req.source(s.cfg.JWKSAllowHTTP)
			if err != nil {
				return 0, nil, err
			}
			spec.Keys = &src
		}
	default:
		return 0, nil, invalid(fmt.Sprintf("auth_method %q: must be one of %s", req.AuthMethod, strings.Join(clients.AuthMethods, ", ")))
	}
	c, err := s.deps.Ops.CreateClient(ctx, spec)
	if spec.Method() != clients.AuthClientSecret {
		// No secret: the client signs its assertions (RFC 7523 section 2.2).
		if err != nil && (!errors.Is(err, clients.ErrNotReplicated) || c.ID == "") {
			return 0, nil, err
		}
		return http.StatusCreated, createdClient{operations.ClientOf(c.Client)}, err
	}
	return withSecretResult(http.StatusCreated, c, err)
}

// createdClient is a created private_key_jwt client, with its URL.
type createdClient struct{ operations.Client }

func (c createdClient) Location() string { return Prefix + "/clients/" + c.ID }

// withSecretResult answers a created or rotated client: with its secret
// even when the replicas did not confirm the change.
func withSecretResult(status int, c operations.WithSecret, err error) (int, any, error) {
	if c.ClientSecret == "" {
		if err == nil {
			err = errors.New("adminapi: no secret")
		}
		return 0, nil, err
	}
	return status, clientWithSecret{operations.ClientWithSecretOf(c)}, err
}

func (s *Server) handleGetClient(ctx context.Context, r *http.Request, _ []byte) (int, any, error) {
	c, err := s.deps.Ops.GetClient(ctx, r.PathValue("client_id"))
	return http.StatusOK, operations.ClientOf(c), err
}

func (s *Server) handleRotateSecret(ctx context.Context, r *http.Request, body []byte) (int, any, error) {
	if err := noBody(body); err != nil {
		return 0, nil, err
	}
	c, err := s.deps.Ops.RotateSecret(ctx, r.PathValue("client_id"))
	status, v, err := withSecretResult(http.StatusOK, c, err)
	if v != nil {
		v = rotated{v.(clientWithSecret).ClientWithSecret} // 200: no Location
	}
	return status, v, err
}

// rotated is a rotated client: the same body as a created one.
type rotated struct{ operations.ClientWithSecret }

// changed answers a client after a change: the client, or, when the
// replicas did not confirm it, the client with the error.
func changed(c clients.Client, err error) (int, any, error) {
	if err != nil && (!errors.Is(err, clients.ErrNotReplicated) || c.ID == "") {
		return 0, nil, err
	}
	return http.StatusOK, operations.ClientOf(c), err
}

// addedSecret is a client with its new second secret and the secret's
// id; its URL is the secret's.
type addedSecret struct{ operations.ClientWithSecret }

func (a addedSecret) Location() string {
	return Prefix + "/clients/" + a.ID + "/secrets/" + strconv.FormatInt(a.SecretID, 10)
}

// handleAddSecret gives a client its second secret, for a rotation without
// downtime: deploy it, then retire the old one (handleRetireSecret).
func (s *Server) handleAddSecret(ctx context.Context, r *http.Request, body []byte) (int, any, error) {
	if err := noBody(body); err != nil {
		return 0, nil, err
	}
	c, err := s.deps.Ops.AddSecret(ctx, r.PathValue("client_id"))
	if c.ClientSecret == "" {
		if err == nil {
			err = errors.New("adminapi: no secret")
		}
		return 0, nil, err
	}
	return http.StatusCreated, addedSecret{operations.ClientWithSecretOf(c)}, err
}

// handleRetireSecret takes one of a client's two secrets away; that
// secret's tokens die at once.
func (s *Server) handleRetireSecret(ctx context.Context, r *http.Request, body []byte) (int, any, error) {
	if err := noBody(body); err != nil {
		return 0, nil, err
	}
	id, raw := r.PathValue("client_id"), r.PathValue("secret_id")
	sid, perr := strconv.ParseInt(raw, 10, 64)
	if perr != nil || sid < 1 {
		return 0, nil, clients.NotFoundf("client %s has no secret %q", id, raw)
	}
	return changed(s.deps.Ops.RetireSecret(ctx, id, sid))
}

// handleRotateKeys replaces a private_key_jwt or self_signed_tls_client_auth
// client's public keys, or a tls_client_auth client's certificate name; every
// token issued before dies at once.
func (s *Server) handleRotateKeys(ctx context.Context, r *http.Request, body []byte) (int, any, error) {
	var req struct {
		keysRequest
		tlsSubjectRequest
	}
	if err := decode(body, &req); err != nil {
		return 0, nil, err
	}
	sub, err := req.subject()
	if err != nil {
		return 0, nil, err
	}
	if sub != nil {
		// A tls_client_auth client's credential is its certificate name.
		if req.given() {
			return 0, nil, invalid("give a certificate name (" + sub.Kind + ", tls_client_auth) or keys (jwks, jwks_uri), not both")
		}
		return changed(s.deps.Ops.RotateTLSSubject(ctx, r.PathValue("client_id"), *sub))
	}
	src, err := req.source(s.cfg.JWKSAllowHTTP)
	if err != nil {
		return 0, nil, err
	}
	return changed(s.deps.Ops.RotateKeys(ctx, r.PathValue("client_id"), src))
}

func (s *Server) handleRevoke(ctx context.Context, r *http.Request, body []byte) (int, any, error) {
	if err := noBody(body); err != nil {
		return 0, nil, err
	}
	return changed(s.deps.Ops.Revoke(ctx, r.PathValue("client_id")))
}

type rateLimitRequest struct {
	RateLimitPerMinute      *int64 `json:"rate_limit_per_minute"`
	TokenRateLimitPerMinute *int64 `json:"token_rate_limit_per_minute"`
}

func (s *Server) handleSetRateLimit(token bool) handlerFunc {
	member := "rate_limit_per_minute"
	if token {
		member = "token_rate_limit_per_minute"
	}
	return func(ctx context.Context, r *http.Request, body []byte) (int, any, error) {
		var req rateLimitRequest
		if err := decode(body, &req); err != nil {
			return 0, nil, err
		}
		n := req.RateLimitPerMinute
		other := req.TokenRateLimitPerMinute
		if token {
			n, other = other, n
		}
		if n == nil || other != nil {
			return 0, nil, invalid("the body must be {\"" + member + "\": N}")
		}
		if err := operations.CheckLimit(member, *n); err != nil {
			return 0, nil, err
		}
		return changed(s.deps.Ops.SetRateLimit(ctx, r.PathValue("client_id"), *n, token))
	}
}

// handleSetDPoPBound sets the client's dpop_bound_access_tokens (RFC 9449
// section 5.2).
func (s *Server) handleSetDPoPBound(ctx context.Context, r *http.Request, body []byte) (int, any, error) {
	var req struct {
		DPoPBound *bool `json:"dpop_bound_access_tokens"`
	}
	if err := decode(body, &req); err != nil {
		return 0, nil, err
	}
	if req.DPoPBound == nil {
		return 0, nil, invalid("the body must be {\"dpop_bound_access_tokens\": true} or false")
	}
	return changed(s.deps.Ops.SetDPoPBound(ctx, r.PathValue("client_id"), *req.DPoPBound))
}

// handleClientAudit answers a client's trail, oldest first: every entry,
// or with limit or cursor a page of them (limit default 100) and the
// next page's cursor; of one operator client with operator.
func (s *Server) handleClientAudit(ctx context.Context, r *http.Request, _ []byte) (int, any, error) {
	q := r.URL.Query()
	limit, after, err := pageQuery(q, operations.ValidAuditMark)
	if err != nil {
		return 0, nil, err
	}
	if !q.Has("limit") && !q.Has("cursor") {
		limit = 0 // the whole trail, as before pages
	}
	p, err := s.deps.Ops.ClientAuditPage(ctx, r.PathValue("client_id"), q.Get("operator"), after, limit)
	if err != nil {
		return 0, nil, err
	}
	out := page[operations.AuditEntry]{Items: operations.AuditEntriesOf(p.Records)}
	if p.More {
		out.NextCursor = nextCursor(operations.AuditMark(p.Records[len(p.Records)-1]))
	}
	return http.StatusOK, out, nil
}

// keys is the signing key state this replica serves.
type keys struct {
	SigningKID string   `json:"signing_kid"`
	Kids       []string `json:"kids"`
	Withdrawn  []string `json:"withdrawn"`
}

func (s *Server) keyState(ctx context.Context) (keys, error) {
	withdrawn, err := s.deps.Ops.Withdrawn(ctx)
	if err != nil {
		return keys{}, err
	}
	return keys{SigningKID: s.deps.Keys.SigningKeyID(), Kids: s.deps.Keys.PublishedKeyIDs(), Withdrawn: withdrawn}, nil
}

func (s *Server) handleListKeys(ctx context.Context, r *http.Request, _ []byte) (int, any, error) {
	k, err := s.keyState(ctx)
	return http.StatusOK, k, err
}

type withdrawal struct {
	Withdrawn string `json:"withdrawn"`
	Version   int64  `json:"version"`
	Note      string `json:"note"`
}

func (s *Server) handleWithdrawKey(ctx context.Context, r *http.Request, body []byte) (int, any, error) {
	if err := noBody(body); err != nil {
		return 0, nil, err
	}
	kid := r.PathValue("kid")
	v, err := s.deps.Ops.WithdrawKey(ctx, kid, s.deps.Keys)
	if v == 0 {
		return 0, nil, err
	}
	w := withdrawal{Withdrawn: kid, Version: v,
		Note: "every server refuses the key's tokens within seconds; remove it from the key files too ('authserver keys withdraw --file FILE " + kid + "', harmless to run again)"}
	var unconfirmed *keywithdrawal.NotReplicatedError
	var unnotified *keywithdrawal.NotifyError
	switch {
	case errors.As(err, &unconfirmed):
		err = unconfirmedWithdrawal{unconfirmed}
	case errors.As(err, &unnotified): // recorded: servers see it at their next poll
		s.log.WarnContext(ctx, "admin api: key withdrawn, its notification not sent", "kid", kid, "err", err)
		w.Note = unnotified.Public() + "; " + w.Note
		err = nil
	case err != nil:
		return 0, nil, err
	}
	return http.StatusOK, w, err
}

// unconfirmedWithdrawal is a withdrawal the replicas did not confirm, as a
// change of the registry's that they did not (errors.Is(err,
// clients.ErrNotReplicated) holds): answered 202 with a warning.
type unconfirmedWithdrawal struct {
	*keywithdrawal.NotReplicatedError
}

func (u unconfirmedWithdrawal) Error() string { return u.Public() }

// Public is the warning: what the replicas said of the withdrawal.
func (u unconfirmedWithdrawal) Public() string {
	return clients.ErrNotReplicated.Error() + ": " + u.NotReplicatedError.Public()
}

// Unwrap makes errors.Is hold for both packages' ErrNotReplicated.
func (u unconfirmedWithdrawal) Unwrap() []error {
	return []error{clients.ErrNotReplicated, u.NotReplicatedError}
}

type seeded struct {
	Organization operations.Org      `json:"organization"`
	Clients      []operations.Seeded `json:"clients"`
	Note         string              `json:"note"`
}

func (s *Server) handleSeedSandbox(ctx context.Context, r *http.Request, body []byte) (int, any, error) {
	if err := noBody(body); err != nil {
		return 0, nil, err
	}
	o, list, err := s.deps.Ops.SeedSandbox(ctx)
	if len(list) == 0 {
		if err == nil {
			err = errors.New("adminapi: nothing seeded")
		}
		return 0, nil, err
	}
	out := seeded{Organization: operations.OrgOf(o), Clients: operations.SeededOf(list), Note: "sandbox: demo data only, never real patients"}
	return http.StatusOK, out, err
}

func (s *Server) handleAdminAudit(ctx context.Context, r *http.Request, _ []byte) (int, any, error) {
	limit, before, err := pageQuery(r.URL.Query(), streamID.MatchString)
	if err != nil {
		return 0, nil, err
	}
	entries, err := s.audit.read(ctx, before, r.URL.Query().Get("operator"), limit)
	if err != nil {
		return 0, nil, err
	}
	out := page[AuditEntry]{Items: entries}
	if len(entries) == limit {
		out.NextCursor = nextCursor(entries[len(entries)-1].ID)
	}
	return http.StatusOK, out, nil
}
