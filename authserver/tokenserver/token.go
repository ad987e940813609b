package tokenserver

import (
	"context"
	"net/http"
	"time"

	"github.com/go-oauth2/oauth2/v4"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// registry is what the token service needs of the client registry.
type registry interface {
	Authenticate(ctx context.Context, a clients.Attempt) (clients.Authentication, error)
	ClientKeys(ctx context.Context, id string) (clients.ClientKeys, error)
	RevokeToken(ctx context.Context, t clients.TokenRef, expires time.Time) error
	// GetClient reads a client's record (go-oauth2's client store,
	// registryClients).
	GetClient(ctx context.Context, id string) (clients.Client, error)
}

// handleToken serves POST /api/v1/oauth/token/ (RFC 6749 sections 4.4, 5):
// parse, check the grant type, check a DPoP proof (proof.go), authenticate
// (scope, the proof's verdict and single use, and the token limit in the
// same round trip), then issue through go-oauth2 (oauth2adapter.go), bound
// to the proof's key when there is one (RFC 9449 section 5).
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	req, err := s.parse(r, true)
	if err != nil {
		s.refuse(ctx, w, r, credentials{}, err, counted)
		return
	}
	// RFC 6749 section 3.2: a parameter sent without a value is treated as
	// omitted, so "grant_type=" is a missing grant type.
	switch gt := req.Params.Get("grant_type"); {
	case gt == "":
		s.refuse(ctx, w, r, req.Client, invalidRequest("grant_type is required"), counted)
		return
	case gt != string(oauth2.ClientCredentials):
		s.refuse(ctx, w, r, req.Client, errUnsupportedGrant, notCounted)
		return
	}
	s.checkProof(w, r, req)
	auth, failed, err := s.authenticate(ctx, r, req, true, nil)
	if err != nil {
		s.refuse(ctx, w, r, req.Client, err, failed)
		return
	}
	body, err := s.issue(ctx, req, auth)
	if err != nil {
		s.refuse(ctx, w, r, req.Client, err, notCounted)
		return
	}
	answers.WriteText(w, http.StatusOK, noStoreHeader, body.appendJSON)
	s.metrics.TokenIssued()
}

// loggableID keeps a presented client id out of the logs unless it has the
// form of one: a secret pasted into the id field must never be logged.
func loggableID(id string) string {
	if clients.ValidClientID(id) {
		return id
	}
	return "(malformed)"
}
