package adminapi

import (
	"context"
	"net/http"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/partnerapi/authplatform/pkg/audit"
	"github.com/partnerapi/authplatform/pkg/logging"
	"github.com/partnerapi/authplatform/pkg/metrics"
)

// auditMaxLen caps the admin audit stream (XADD MAXLEN ~).
const auditMaxLen = 100_000

// auditLog is the admin audit stream: one audit.Record per authenticated
// call, whatever its answer, with who called (the operator client id, the
// request id, the caller's address), what (method, route, path) and the
// status. It never holds a secret or a request body. Callers that present
// no genuine token are not recorded here (the access log has them): they
// could otherwise push real entries out of the capped stream.
type auditLog struct {
	rdb redis.UniversalClient
	key string
	now func() time.Time
}

// AuditEntry is one admin call as GET /admin/v1/audit shows it.
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

func auditEntryOf(r audit.Record) AuditEntry {
	return AuditEntry{ID: r.ID, At: r.At, Operator: r.Actor.Operator, RequestID: r.Actor.RequestID,
		Address: r.Actor.Address, Method: r.Method, Route: r.Route, Path: r.Path, Status: r.Status, Replayed: r.Replayed}
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
	rec := audit.Record{At: s.audit.now(), Actor: audit.Actor{Operator: op.ClientID, RequestID: logging.RequestID(ctx), Address: op.Address},
		Method: r.Method, Route: route, Path: r.URL.Path, Status: status, Replayed: replayed}
	err := s.audit.rdb.XAdd(context.WithoutCancel(ctx), &redis.XAddArgs{Stream: s.audit.key, MaxLen: auditMaxLen, Approx: true, Values: rec.Fields()}).Err()
	if err != nil {
		s.log.ErrorContext(ctx, "admin api: audit entry not written", "err", err, "operator", op.ClientID, "method", r.Method, "path", r.URL.Path, "status", status)
	}
}

// read returns up to limit entries, newest first, older than before (a
// stream id; "" for the newest), of the operator client operator only
// when it is not "" (read on through the stream until the page is full).
func (a *auditLog) read(ctx context.Context, before, operator string, limit int) ([]AuditEntry, error) {
	end := "+"
	if before != "" {
		end = "(" + before
	}
	batch := int64(limit)
	if operator != "" {
		batch = max(batch, 500)
	}
	out := make([]AuditEntry, 0, limit)
	for len(out) < limit {
		msgs, err := a.rdb.XRevRangeN(ctx, a.key, end, "-", batch).Result()
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			rec := audit.FromFields(m.ID, m.Values)
			if operator != "" && rec.Actor.Operator != operator {
				continue
			}
			if out = append(out, auditEntryOf(rec)); len(out) == limit {
				break
			}
		}
		if int64(len(msgs)) < batch {
			break
		}
		end = "(" + msgs[len(msgs)-1].ID
	}
	return out, nil
}
