package adminapi

import (
	"context"
	"net/http"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/metrics"
)

// auditMaxLen caps the admin audit stream (XADD MAXLEN ~).
const auditMaxLen = 100_000

// auditLog is the admin audit stream: one entry per authenticated call,
// whatever its answer, with who called (operator client id), the request
// id, the caller's address, what (method, route, path) and the status. It
// never holds a secret or a request body. Callers that present no genuine
// token are not recorded here (the access log has them): they could
// otherwise push real entries out of the capped stream.
type auditLog struct {
	rdb redis.UniversalClient
	key string
	now func() time.Time
}

// AuditEntry is one admin call.
type AuditEntry struct {
	ID        string    `json:"id"`
	At        time.Time `json:"at"`
	Operator  string    `json:"operator"`
	RequestID string    `json:"request_id"`
	Address   string    `json:"address"`
	Method    string    `json:"method"`
	Route     string    `json:"route"`
	Path      string    `json:"path"`
	Status    int       `json:"status"`
	Replayed  bool      `json:"replayed,omitempty"`
}

// record appends a call to the admin audit stream. A failure is logged,
// not answered: the call itself is done.
func (s *Server) record(ctx context.Context, r *http.Request, op *operator, status int, replayed bool) {
	if status < 0 {
		status = -status
	}
	route := r.Pattern
	if route == "" {
		route = metrics.Unmatched
	}
	values := []any{"at", s.audit.now().UTC().Format(time.RFC3339Nano), "operator", op.ClientID,
		"request_id", logging.RequestID(ctx), "address", op.Address, "method", r.Method,
		"route", route, "path", r.URL.Path, "status", strconv.Itoa(status)}
	if replayed {
		values = append(values, "replayed", "1")
	}
	err := s.audit.rdb.XAdd(context.WithoutCancel(ctx), &redis.XAddArgs{Stream: s.audit.key, MaxLen: auditMaxLen, Approx: true, Values: values}).Err()
	if err != nil {
		s.log.ErrorContext(ctx, "admin api: audit entry not written", "err", err, "operator", op.ClientID, "method", r.Method, "path", r.URL.Path, "status", status)
	}
}

// read returns up to limit entries, newest first, older than before (a
// stream id; "" for the newest).
func (a *auditLog) read(ctx context.Context, before string, limit int) ([]AuditEntry, error) {
	end := "+"
	if before != "" {
		end = "(" + before
	}
	msgs, err := a.rdb.XRevRangeN(ctx, a.key, end, "-", int64(limit)).Result()
	if err != nil {
		return nil, err
	}
	out := make([]AuditEntry, 0, len(msgs))
	for _, m := range msgs {
		str := func(k string) string { v, _ := m.Values[k].(string); return v }
		at, _ := time.Parse(time.RFC3339Nano, str("at"))
		status, _ := strconv.Atoi(str("status"))
		out = append(out, AuditEntry{ID: m.ID, At: at, Operator: str("operator"), RequestID: str("request_id"),
			Address: str("address"), Method: str("method"), Route: str("route"), Path: str("path"),
			Status: status, Replayed: str("replayed") == "1"})
	}
	return out, nil
}
