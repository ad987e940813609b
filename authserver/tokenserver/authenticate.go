package tokenserver

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"

	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/dpop"
	"github.com/partnerapi/authplatform/pkg/httpserver"
)

// authenticate is the one way a client authenticates, on the token endpoint
// (token true: the requested scope is checked and the request counted
// against the client's token limit) and as the caller of introspection. It
// takes one Redis round trip (clients.Store.Authenticate) and returns the
// OAuth error to answer when the client is not let through.
//
// Failed authentications are limited so that nobody is locked out by a
// neighbour behind the same address (a hospital's shared egress, a NAT),
// nor by a stale instance of its own client there:
//
//   - distinct wrong secrets for a client are counted per presenting
//     address and client in Redis, atomically with the check,
//     FailuresPerMinute per minute; past it, that address's attempts for
//     that client with a new secret are answered slow_down without
//     checking the secret, and no other client, and not the same client
//     from elsewhere, is affected;
//   - a secret the address already had refused for that client in the last
//     minute (a rotated-out secret a stale instance keeps sending) is
//     answered invalid_client again without being checked or spending that
//     budget, and counted apart, RepeatedFailuresPerMinute per minute, past
//     which those repeats alone are answered slow_down: the right secret
//     sent from the same address keeps working;
//   - every failed request (invalid_client, whether or not the id names a
//     client; requests without credentials; malformed requests) counts
//     against the address's much higher AddressFailuresPerMinute, kept by
//     each replica in memory; past it, every such failure is answered
//     slow_down alike, and a DPoP proof is verified only once the
//     credential beside it held (deferProof), so a spent address's
//     refused requests cost no signature check. Counting and answering known and unknown ids alike
//     keeps the ceiling from telling which ids exist (neither the answer
//     nor what an attempt leaves of the ceiling differs). A request with
//     valid credentials is never refused by it.
//
// A client assertion (private_key_jwt) is verified here against the
// client's keys, cached in memory, and then goes through the same script:
// its jti is marked used there, and a wrong or replayed one is a failure
// like a wrong secret, under the same limits (RFC 7521 section 4.2.1). A
// check (introspection) names a token of the caller whose standing is read
// in the same round trip. Every credential compared there is counted for
// the operators (recorder.CredentialChecked), those refused unchecked are
// not.
func (s *Server) authenticate(ctx context.Context, r *http.Request, req *clientRequest, token bool, check *clients.TokenRef) (clients.Authentication, failure, error) {
	if !req.Client.Present {
		return clients.Authentication{}, counted, errInvalidClient
	}
	httpserver.Annotate(ctx, slog.String("client_id", loggableID(req.Client.ID)))
	attempt := clients.Attempt{
		ClientID: req.Client.ID, Secret: req.Client.Secret, Address: limitKey(s.cfg.Trust.Of(r)),
		FailureLimit: s.cfg.FailuresPerMinute, RepeatLimit: s.cfg.RepeatedFailuresPerMinute, Token: token, Now: s.cfg.RateNow,
		Check: check,
	}
	method := clients.AuthClientSecret
	if req.Client.Assertion != "" {
		method = clients.AuthPrivateKeyJWT
		httpserver.Annotate(ctx, slog.String("auth_method", method))
	} else if req.Client.Certificate {
		method = "tls_certificate"
		httpserver.Annotate(ctx, slog.String("auth_method", method))
	} else if !s.secretForm(ctx, req.Client.Secret) {
		// Refused before any lookup, answered as any invalid_client and
		// counted, like any invalid_client, against the address.
		return clients.Authentication{}, counted, errUnknownClient
	}
	if token {
		attempt.Scope, attempt.BadScope = requestedScope(req.Params.Get("scope"))
		attempt.DPoP = req.Proof
	}
	var a clients.Authentication
	// An assertion checked against keys the client no longer has is
	// checked again with its keys reloaded, once.
	for try := 0; try < 2; try++ {
		if req.Client.Certificate {
			cc, err := s.checkCertificate(ctx, req, try > 0)
			if err != nil {
				return clients.Authentication{}, notCounted, err
			}
			attempt.Certificate = cc
			if token && cc.Verified && req.proofDeferred {
				// The proof's signature is checked only for a certificate
				// that authenticated (deferProof).
				req.verifyProof()
				attempt.DPoP = req.Proof
			}
		}
		if req.Client.Assertion != "" {
			as, err := s.checkAssertion(ctx, req.Client, try > 0)
			if err != nil {
				return clients.Authentication{}, notCounted, err
			}
			attempt.Assertion = as
			if token && as.Verified && req.proofDeferred {
				// The proof's signature is checked only for an assertion
				// that verified (deferProof).
				req.verifyProof()
				attempt.DPoP = req.Proof
			}
		}
		var err error
		if a, err = s.reg.Authenticate(ctx, attempt); err != nil {
			return a, notCounted, err
		}
		if token && a.Outcome == clients.ProofInvalid && req.proofDeferred {
			// A secret that held, from an address whose ceiling is spent:
			// its proof is verified now, and the request authenticated
			// again with the verdict (the first round trip refused it as
			// ProofInvalid, which spends and marks nothing).
			req.verifyProof()
			attempt.DPoP = req.Proof
			if a, err = s.reg.Authenticate(ctx, attempt); err != nil {
				return a, notCounted, err
			}
		}
		if a.Outcome != clients.StaleKeys {
			break
		}
	}
	// Counted here, once: a stale-keys try was not checked, only the last
	// try can be.
	if a.Checked {
		s.metrics.CredentialChecked(method)
	}
	if a.Outcome == clients.StaleKeys {
		return a, notCounted, fmt.Errorf("%w: client %s: keys changed twice during one authentication", clients.ErrUnavailable, req.Client.ID)
	}
	if a.Repeated {
		// A secret this address already had refused for this client: most
		// often a stale instance still sending a rotated-out secret.
		httpserver.Annotate(ctx, slog.Bool("repeated_secret", true))
	}
	switch a.Outcome {
	case clients.Authenticated:
		return a, notCounted, nil
	case clients.TooManyFailures:
		httpserver.Annotate(ctx, slog.Bool("failure_budget_spent", true))
		return a, notCounted, &slowDown{retryAfter: a.Decision.RetryAfterSeconds(), failures: true}
	case clients.InvalidScope:
		return a, notCounted, errInvalidScope
	case clients.TokenLimited:
		return a, notCounted, &slowDown{retryAfter: a.Decision.RetryAfterSeconds()}
	case clients.ProofRequired:
		return a, notCounted, errProofRequired
	case clients.ProofInvalid:
		return a, notCounted, proofError(req.ProofErr)
	case clients.ProofReplayed:
		return a, notCounted, proofError(dpop.ErrReplayed)
	}
	if !a.Known {
		return a, counted, errUnknownClient
	}
	return a, counted, errInvalidClient
}

// secretForm reports whether a presented secret may be looked up: its
// checksum holds (clients.ValidSecret), or it has the pre-checksum form and
// the operator still accepts those (Config.AcceptLegacySecrets; the access
// record then says legacy_secret, so the operator sees who must rotate). A
// secret refused here gets the same invalid_client as a wrong one, without
// any Redis lookup, and counts, like any invalid_client, against the
// address's ceiling of failed requests (Config.AddressFailuresPerMinute);
// its access record says secret_checksum_failed, which points at a
// mistyped or truncated secret.
func (s *Server) secretForm(ctx context.Context, secret string) bool {
	if clients.ValidSecret(secret) {
		return true
	}
	if s.cfg.AcceptLegacySecrets && clients.LegacySecret(secret) {
		httpserver.Annotate(ctx, slog.Bool("legacy_secret", true))
		return true
	}
	httpserver.Annotate(ctx, slog.Bool("secret_checksum_failed", true))
	return false
}

// errUnknownClient is invalid_client for an id that names no client (or a
// secret refused before any lookup): it is answered exactly as
// invalid_client, and counted against the address alike.
var errUnknownClient = &oauthError{Status: errInvalidClient.Status, Code: errInvalidClient.Code, Description: errInvalidClient.Description}
