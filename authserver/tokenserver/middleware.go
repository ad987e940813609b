package tokenserver

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/partnerapi/authplatform/pkg/logging"
)

// middleware gives every request an id, recovers from panics (answering
// 500 without internals) and logs one access record.
func (s *Server) middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		id := r.Header.Get("X-Request-Id")
		if !logging.AcceptRequestID(id) || !s.cfg.Trust.FromProxy(r) {
			id = logging.NewRequestID()
		}
		w.Header().Set("X-Request-Id", id)
		notes := &annotations{}
		ctx := context.WithValue(logging.WithRequestID(r.Context(), id), annotationsKey{}, notes)
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		defer func() {
			if p := recover(); p != nil {
				s.log.ErrorContext(ctx, "panic", "panic", p)
				if !rec.wrote {
					writeDetail(rec, http.StatusInternalServerError, nil, "internal error")
				}
			}
			attrs := []slog.Attr{
				slog.String("method", r.Method), slog.String("path", r.URL.Path),
				slog.Int("status", rec.status), slog.Duration("duration", time.Since(start)),
				slog.String("client_ip", s.cfg.Trust.Of(r).String()),
			}
			s.log.LogAttrs(ctx, slog.LevelInfo, "request", append(attrs, notes.list()...)...)
		}()
		next.ServeHTTP(rec, r.WithContext(ctx))
	})
}

type annotationsKey struct{}

// annotations are attributes a handler adds to the request's access record.
type annotations struct {
	mu    sync.Mutex
	attrs []slog.Attr
}

func (a *annotations) list() []slog.Attr {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.attrs
}

// annotate adds attributes to the access record of ctx's request.
func annotate(ctx context.Context, attrs ...slog.Attr) {
	if a, ok := ctx.Value(annotationsKey{}).(*annotations); ok {
		a.mu.Lock()
		a.attrs = append(a.attrs, attrs...)
		a.mu.Unlock()
	}
}

type statusRecorder struct {
	http.ResponseWriter
	status int
	wrote  bool
}

func (r *statusRecorder) WriteHeader(code int) {
	if !r.wrote {
		r.status, r.wrote = code, true
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *statusRecorder) Write(b []byte) (int, error) {
	r.wrote = true
	return r.ResponseWriter.Write(b)
}

// rateClock is the clock of the rate limits: the injected one, else the
// local clock (only durations measured by the limiter are added to it).
func (s *Server) rateClock() time.Time {
	if s.cfg.RateNow != nil {
		return s.cfg.RateNow()
	}
	return time.Now()
}

// limitKey is what the per-address limit counts: an IPv4 address, or the /64
// network of an IPv6 one, since a single IPv6 host usually holds a whole /64
// and could otherwise step to a fresh address for every attempt.
func limitKey(a netip.Addr) string {
	if a.Is6() && !a.Is4In6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.Unmap().String()
}
