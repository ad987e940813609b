package operations

import (
	"time"

	"github.com/partnerapi/authplatform/pkg/audit"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// The wire types: what the admin API answers (authserver/adminapi/
// openapi.json) and the CLI prints with --json (deploy/docs/operator-guide.md,
// "JSON output"), the same JSON at both doors, converted from the registry's
// storage types, which carry no JSON of their own. A change of storage
// never changes the wire, and a member is added here, documented, or not
// at all.

// Client is a client as shown, never with a secret.
type Client struct {
	ID                      string       `json:"client_id"`
	Name                    string       `json:"name"`
	Audience                string       `json:"audience"`
	OrgSlug                 string       `json:"organization_slug"`
	OrgName                 string       `json:"organization_name"`
	Environment             string       `json:"environment"`
	Scopes                  []string     `json:"scopes"`
	RateLimitPerMinute      int64        `json:"rate_limit_per_minute"`
	TokenRateLimitPerMinute int64        `json:"token_rate_limit_per_minute"`
	Status                  string       `json:"status"`
	Generation              int64        `json:"credential_generation"`
	CreatedAt               time.Time    `json:"created_at"`
	UpdatedAt               time.Time    `json:"updated_at"`
	RotatedAt               *time.Time   `json:"secret_rotated_at,omitempty"`
	RevokedAt               *time.Time   `json:"revoked_at,omitempty"`
	AuthMethod              string       `json:"auth_method"`
	Secrets                 []SecretInfo `json:"secrets"`
	KeysVersion             int64        `json:"keys_version,omitempty"`
	JWKSURI                 string       `json:"jwks_uri,omitempty"`
	// DPoPBound is the client metadata dpop_bound_access_tokens (RFC 9449
	// section 5.2), shown only when true.
	DPoPBound bool `json:"dpop_bound_access_tokens,omitempty"`
	// The certificate name a tls_client_auth client registered (RFC 8705
	// section 2.1.2): one of these, shown for such a client only.
	TLSSubjectDN string `json:"tls_client_auth_subject_dn,omitempty"`
	TLSSANDNS    string `json:"tls_client_auth_san_dns,omitempty"`
	TLSSANURI    string `json:"tls_client_auth_san_uri,omitempty"`
	TLSSANIP     string `json:"tls_client_auth_san_ip,omitempty"`
	TLSSANEmail  string `json:"tls_client_auth_san_email,omitempty"`
}

// SecretInfo names one of a client's secrets (never the secret).
type SecretInfo struct {
	ID        int64     `json:"secret_id"`
	CreatedAt time.Time `json:"created_at"`
}

// ClientOf is the wire form of a stored client.
func ClientOf(c clients.Client) Client {
	w := Client{ID: c.ID, Name: c.Name, Audience: c.Audience, OrgSlug: c.OrgSlug, OrgName: c.OrgName,
		Environment: c.Environment, Scopes: c.Scopes, RateLimitPerMinute: c.RateLimitPerMinute,
		TokenRateLimitPerMinute: c.TokenRateLimitPerMinute, Status: c.Status, Generation: c.Generation,
		CreatedAt: c.CreatedAt, UpdatedAt: c.UpdatedAt, RotatedAt: c.RotatedAt, RevokedAt: c.RevokedAt,
		AuthMethod: c.AuthMethod, KeysVersion: c.KeysVersion, JWKSURI: c.JWKSURI, DPoPBound: c.DPoPBound}
	if w.Scopes == nil {
		w.Scopes = []string{}
	}
	if sub := c.TLSSubject; sub != nil {
		switch sub.Kind {
		case clients.SubjectDN:
			w.TLSSubjectDN = sub.Value
		case clients.SubjectSANDNS:
			w.TLSSANDNS = sub.Value
		case clients.SubjectSANURI:
			w.TLSSANURI = sub.Value
		case clients.SubjectSANIP:
			w.TLSSANIP = sub.Value
		case clients.SubjectSANEmail:
			w.TLSSANEmail = sub.Value
		}
	}
	w.Secrets = make([]SecretInfo, len(c.Secrets))
	for i, si := range c.Secrets {
		w.Secrets[i] = SecretInfo{ID: si.ID, CreatedAt: si.CreatedAt}
	}
	return w
}

// ClientsOf converts a list.
func ClientsOf(cs []clients.Client) []Client {
	out := make([]Client, len(cs))
	for i, c := range cs {
		out[i] = ClientOf(c)
	}
	return out
}

// Org is an organisation as shown.
type Org struct {
	Slug        string    `json:"slug"`
	Name        string    `json:"name"`
	Environment string    `json:"environment"`
	CreatedAt   time.Time `json:"created_at"`
}

// OrgOf is the wire form of a stored organisation.
func OrgOf(o clients.Org) Org {
	return Org{Slug: o.Slug, Name: o.Name, Environment: o.Environment, CreatedAt: o.CreatedAt}
}

// OrgsOf converts a list.
func OrgsOf(os []clients.Org) []Org {
	out := make([]Org, len(os))
	for i, o := range os {
		out[i] = OrgOf(o)
	}
	return out
}

// AuditEntry is one entry of a client's or an organisation's audit trail
// as shown: the actor at the end of the detail ("... by operator=ID
// request_id=R address=A", "... by cli"), as the trails have always shown
// it.
type AuditEntry struct {
	ID       string    `json:"id"`
	Event    string    `json:"event"`
	ClientID string    `json:"client_id,omitempty"`
	Org      string    `json:"org,omitempty"`
	At       time.Time `json:"at"`
	Detail   string    `json:"detail,omitempty"`
}

// AuditEntryOf is the wire form of a registry audit record.
func AuditEntryOf(r audit.Record) AuditEntry {
	return AuditEntry{ID: r.ID, Event: r.Event, ClientID: r.ClientID, Org: r.Org, At: r.At, Detail: r.DetailWithActor()}
}

// AuditEntriesOf converts a list.
func AuditEntriesOf(rs []audit.Record) []AuditEntry {
	out := make([]AuditEntry, len(rs))
	for i, r := range rs {
		out[i] = AuditEntryOf(r)
	}
	return out
}

// Seeded is a demo client of the sandbox as shown: with its secret when
// the seeding that answers created it.
type Seeded struct {
	Client
	ClientSecret string `json:"client_secret,omitempty"`
}

// SeededOf converts the seeded clients.
func SeededOf(list []clients.SeededClient) []Seeded {
	out := make([]Seeded, len(list))
	for i, s := range list {
		out[i] = Seeded{ClientOf(s.Client), s.Secret}
	}
	return out
}

// ClientWithSecret is a created or rotated client with its secret, the one
// time it is shown, and (add-secret) the new secret's id.
type ClientWithSecret struct {
	Client
	ClientSecret string `json:"client_secret"`
	SecretID     int64  `json:"secret_id,omitempty"`
}

// ClientWithSecretOf is the wire form of a client with its secret.
func ClientWithSecretOf(w WithSecret) ClientWithSecret {
	return ClientWithSecret{ClientOf(w.Client), w.ClientSecret, w.SecretID}
}
