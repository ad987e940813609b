package adminapi

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"
)

// IdempotencyKeyHeader carries a client-chosen key that makes a change
// (POST, PUT or DELETE) safe to retry
// (draft-ietf-httpapi-idempotency-key-header): the console's forms send one
// each, so a resubmitted form never makes a second change.
const IdempotencyKeyHeader = "Idempotency-Key"

// IdempotencyTTL is how long a key's first answer is replayed.
const IdempotencyTTL = 24 * time.Hour

// idempotencyLockTTL bounds how long a request in progress holds its key:
// a server that dies mid-request frees it after this.
const idempotencyLockTTL = time.Minute

// Idempotency keys are 16 to 255 visible ASCII characters: the answers
// they replay may hold a client secret, encrypted under a key derived from
// the idempotency key itself, so it must be unguessable (a UUID v4).
const (
	minIdempotencyKey = 16
	maxIdempotencyKey = 255
)

// idempotency keeps, per operator and Idempotency-Key, the first answer of
// a change (POST, PUT or DELETE), so that a retry after a timeout or an unconfirmed write gets the
// same answer instead of a second client or a second rotation.
//
// The record is one Redis key, {idem:H}, H being the first 128 bits of
// SHA-256(operator client id, NUL, idempotency key): first a lock
// ("pending", the request's fingerprint) while the operation runs, then
// the answer ("done"). An answer holding a secret must not be stored in
// the clear (secrets are only hashed at rest), so every answer is sealed
// with AES-256-GCM under a key derived by HKDF-SHA256 from the idempotency
// key (salt: the operator client id), which is never stored: only the
// caller that knows the key can read the answer back, and whoever reads
// Redis learns nothing from it.
//
// Answers replayed: 2xx (and 202, an unconfirmed change). A refused
// request (4xx) or a failure (5xx) frees the key, so the caller may fix
// the request and send it again with the same key.
type idempotency struct {
	rdb     redis.UniversalClient
	prefix  string
	ttl     time.Duration
	lockTTL time.Duration
}

// idemRecord is what Redis holds for a key.
type idemRecord struct {
	State       string `json:"state"` // "pending" or "done"
	Fingerprint string `json:"fp"`    // SHA-256 of method, path and body, hex
	Sealed      []byte `json:"sealed,omitempty"`
}

// idemAnswer is the sealed part of a done record.
type idemAnswer struct {
	Status   int    `json:"status"`
	Location string `json:"location,omitempty"`
	Body     []byte `json:"body"`
}

func (s *idempotency) redisKey(operatorID, key string) string {
	h := sha256.Sum256([]byte(operatorID + "\x00" + key))
	return s.prefix + "{idem:" + hex.EncodeToString(h[:16]) + "}"
}

// parseIdempotencyKey reads the header: an sf-string ("...") as the draft
// says, or the bare value most clients send.
func parseIdempotencyKey(v string) (string, *problem) {
	if len(v) >= 2 && v[0] == '"' && v[len(v)-1] == '"' {
		v = v[1 : len(v)-1]
	}
	if len(v) < minIdempotencyKey || len(v) > maxIdempotencyKey {
		return "", invalid(fmt.Sprintf("Idempotency-Key must be %d to %d characters (a UUID v4 is right)", minIdempotencyKey, maxIdempotencyKey))
	}
	for i := 0; i < len(v); i++ {
		if v[i] < 0x21 || v[i] > 0x7e || v[i] == '"' || v[i] == '\\' {
			return "", invalid("Idempotency-Key must be visible ASCII characters without quotes or backslashes")
		}
	}
	return v, nil
}

func fingerprint(r *http.Request, body []byte) string {
	h := sha256.New()
	h.Write([]byte(r.Method + " " + r.URL.Path + "\x00"))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// sealKey derives the answer's encryption key (RFC 5869).
func sealKey(operatorID, key string) ([]byte, error) {
	return hkdf.Key(sha256.New, []byte(key), []byte(operatorID), "partnerapi admin idempotency v1", 32)
}

func seal(operatorID, key string, a idemAnswer) ([]byte, error) {
	plain, err := json.Marshal(a)
	if err != nil {
		return nil, err
	}
	k, err := sealKey(operatorID, key)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, gcm.NonceSize())
	_, _ = rand.Read(nonce)
	return gcm.Seal(nonce, nonce, plain, []byte(operatorID)), nil
}

func unseal(operatorID, key string, sealed []byte) (idemAnswer, error) {
	k, err := sealKey(operatorID, key)
	if err != nil {
		return idemAnswer{}, err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return idemAnswer{}, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return idemAnswer{}, err
	}
	if len(sealed) < gcm.NonceSize() {
		return idemAnswer{}, errors.New("sealed answer too short")
	}
	plain, err := gcm.Open(nil, sealed[:gcm.NonceSize()], sealed[gcm.NonceSize():], []byte(operatorID))
	if err != nil {
		return idemAnswer{}, err
	}
	var a idemAnswer
	return a, json.Unmarshal(plain, &a)
}

// begin takes the key for a request with fingerprint fp. It returns the
// answer to replay when the key has one, or a problem: 409 while another
// request holds it, 422 when it was used for a different request.
func (s *idempotency) begin(ctx context.Context, operatorID, key, fp string) (*idemAnswer, *problem, error) {
	rk := s.redisKey(operatorID, key)
	pending, _ := json.Marshal(idemRecord{State: "pending", Fingerprint: fp})
	for range 2 {
		ok, err := s.rdb.SetNX(ctx, rk, pending, s.lockTTL).Result()
		if err != nil {
			return nil, nil, err
		}
		if ok {
			return nil, nil, nil
		}
		raw, err := s.rdb.Get(ctx, rk).Bytes()
		if errors.Is(err, redis.Nil) {
			continue // expired in between: take it
		}
		if err != nil {
			return nil, nil, err
		}
		var rec idemRecord
		if err := json.Unmarshal(raw, &rec); err != nil {
			return nil, nil, fmt.Errorf("idempotency record: %w", err)
		}
		if subtle.ConstantTimeCompare([]byte(rec.Fingerprint), []byte(fp)) != 1 {
			return nil, newProblem(http.StatusUnprocessableEntity, "idempotency_key_reused",
				"this Idempotency-Key was used for a different request; use a new key for a new request"), nil
		}
		if rec.State != "done" {
			return nil, newProblem(http.StatusConflict, "idempotency_key_in_use",
				"a request with this Idempotency-Key is still being processed; retry in a moment").with("Retry-After", "1"), nil
		}
		a, err := unseal(operatorID, key, rec.Sealed)
		if err != nil {
			return nil, nil, fmt.Errorf("idempotency record: %w", err)
		}
		return &a, nil, nil
	}
	return nil, newProblem(http.StatusConflict, "idempotency_key_in_use", "retry in a moment").with("Retry-After", "1"), nil
}

// finish stores the answer for the key's TTL.
func (s *idempotency) finish(ctx context.Context, operatorID, key, fp string, a idemAnswer) error {
	sealed, err := seal(operatorID, key, a)
	if err != nil {
		return err
	}
	rec, _ := json.Marshal(idemRecord{State: "done", Fingerprint: fp, Sealed: sealed})
	return s.rdb.Set(ctx, s.redisKey(operatorID, key), rec, s.ttl).Err()
}

// release frees the key after a refused or failed request.
func (s *idempotency) release(ctx context.Context, operatorID, key string) error {
	return s.rdb.Del(ctx, s.redisKey(operatorID, key)).Err()
}

// ReplayedHeader marks an answer replayed for an Idempotency-Key.
const ReplayedHeader = "Idempotent-Replayed"

// idempotent runs a change under its Idempotency-Key and returns the status
// answered (negative for a replay, so the audit marks it).
func (s *Server) idempotent(ctx context.Context, w http.ResponseWriter, r *http.Request, op *operator, body []byte, handle handlerFunc) int {
	key, p := parseIdempotencyKey(r.Header.Get(IdempotencyKeyHeader))
	if p != nil {
		writeProblem(w, r, s.log, p, nil)
		return p.Status
	}
	fp := fingerprint(r, body)
	replay, p, err := s.idem.begin(ctx, op.ClientID, key, fp)
	if err != nil {
		p := problemOf(err) // Redis down: 503; a record that does not read: 500
		writeProblem(w, r, s.log, p, err)
		return p.Status
	}
	if p != nil {
		writeProblem(w, r, s.log, p, nil)
		return p.Status
	}
	if replay != nil {
		w.Header().Set(ReplayedHeader, "true")
		if replay.Location != "" {
			w.Header().Set("Location", replay.Location)
		}
		results.WriteBody(w, replay.Status, nil, replay.Body)
		return -replay.Status
	}
	status, v, err := handle(ctx, r, body)
	a, p := render(status, v, err)
	if p != nil {
		if rerr := s.idem.release(context.WithoutCancel(ctx), op.ClientID, key); rerr != nil {
			s.log.WarnContext(ctx, "admin api: free idempotency key", "err", rerr)
		}
		writeProblem(w, r, s.log, p, err)
		return p.Status
	}
	if ferr := s.idem.finish(context.WithoutCancel(ctx), op.ClientID, key, fp, idemAnswer{Status: a.status, Location: a.location, Body: a.body}); ferr != nil {
		// The change is made; only its replay is lost. Say so in the log:
		// the key's lock runs out after idempotencyLockTTL.
		s.log.ErrorContext(ctx, "admin api: store idempotent answer", "err", ferr)
	}
	if a.location != "" {
		w.Header().Set("Location", a.location)
	}
	results.WriteBody(w, a.status, nil, a.body)
	return a.status
}
