package console

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/partnerapi/authplatform/pkg/accesstoken"
	"github.com/partnerapi/authplatform/pkg/clientip"
	"github.com/partnerapi/authplatform/pkg/clients"
	"github.com/partnerapi/authplatform/pkg/httpserver"
)

// Prefix is the path of every console page.
const Prefix = "/console/"

// CookieName is the session cookie: the operator's access token.
const CookieName = "console_session"

// Header values set on every console answer. The policy allows scripts,
// styles and images from the console itself only (no inline script or
// style: 'unsafe-inline' is never granted), no framing anywhere (with
// X-Frame-Options for older browsers), and forms posted back only to the
// console's origin.
const (
	contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
		"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
)

// Verifier checks a token's signature and claims (an
// *accesstoken.CachingVerifier): the console reads the operator's id,
// scopes and expiry from the session's token with it. Whether the operator
// is still in good standing is the admin API's admission's to say, on every
// call.
type Verifier interface {
	VerifyContext(ctx context.Context, token string) (*accesstoken.Claims, error)
}

// Config configures the console.
type Config struct {
	// Trust names the proxies whose X-Forwarded-* headers count: the
	// session cookie is Secure when the request came over TLS, to this
	// server or to a trusted proxy.
	Trust clientip.Trust
	// Now is the clock of session expiry (nil: time.Now).
	Now func() time.Time
}

// Deps are what the console talks to, in process.
type Deps struct {
	// API is the admin API's routes (without its outer layer: the
	// console's own request already has its request id, body limit and
	// access record).
	API http.Handler
	// Token is the token service's handler: sign-in posts to its token
	// endpoint.
	Token http.Handler
	// Tokens reads the session token's claims.
	Tokens Verifier
	// Usage, when not nil, feeds the usage pictures.
	Usage UsageReader
}

// Console is the console's HTTP handler.
type Console struct {
	log    *slog.Logger
	cfg    Config
	deps   Deps
	pages  map[string]*template.Template
	router http.Handler
}

// New builds the console.
func New(logger *slog.Logger, cfg Config, deps Deps) (*Console, error) {
	if deps.API == nil || deps.Token == nil || deps.Tokens == nil {
		return nil, errors.New("console: the admin API, the token endpoint and the token verifier are required")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	pages, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	c := &Console{log: logger, cfg: cfg, deps: deps, pages: pages}
	static, _ := fs.Sub(assets, "static")
	var routes []httpserver.Route
	for _, rt := range c.routes() {
		_, path, _ := strings.Cut(rt.pattern, " ")
		routes = append(routes, httpserver.Route{Pattern: rt.pattern, Handler: keepRoute(path, rt.handler)})
	}
	routes = append(routes, httpserver.Route{Pattern: "GET " + Prefix + "static/{file...}",
		Handler: http.StripPrefix(Prefix+"static/", http.FileServerFS(static))})
	c.router = httpserver.NewRouter(routes, c.misrouted)
	return c, nil
}

// ServeHTTP implements http.Handler: the security headers on every answer,
// then the console's routes.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	c.router.ServeHTTP(w, r)
}

// keepRoute labels the answer with the console's route path (as the router
// does before h runs) again once h is done: the admin API calls h makes in
// process set their own routes on the same request record.
func keepRoute(path string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer httpserver.SetRoute(r.Context(), path)
		h.ServeHTTP(w, r)
	})
}

// misrouted answers a path no console route takes (404) or a method its
// route does not take (405, Allow set by the router) with the console's
// error page.
func (c *Console) misrouted(w http.ResponseWriter, r *http.Request, status int, _ []string) {
	if status == http.StatusMethodNotAllowed {
		c.fail(w, r, nil, status, "Method not allowed", "This console page does not take that method.")
		return
	}
	c.fail(w, r, nil, http.StatusNotFound, "Not found", "There is no console page here.")
}

// session is the signed-in operator.
type session struct {
	token    string
	Operator string
	Scopes   []string
	Expires  time.Time
	CSRF     string
	// idem is the Idempotency-Key of the write being answered (action
	// sets it from the form's key, idempotencyKey), "" on a page.
	idem string
}

// CanWrite tells the templates whether to show write controls.
func (s *session) CanWrite() bool { return slices.Contains(s.Scopes, clients.ScopeAdminWrite) }

// csrfToken binds a form to its session: an HMAC of a fixed label under
// the session token, so only a page served to the session's holder can
// carry it, and it dies with the session. Nothing is stored.
func csrfToken(token string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("partnerapi console csrf v1"))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// errNoSession: no session cookie, or one whose token does not verify.
var errNoSession = errors.New("console: no session")

// sessionOf reads the session cookie. The token's signature and expiry
// are checked here (in process); its client's standing by the admin API on
// each call.
func (c *Console) sessionOf(r *http.Request) (*session, error) {
	ck, err := r.Cookie(CookieName)
	if err != nil || ck.Value == "" {
		return nil, errNoSession
	}
	claims, err := c.deps.Tokens.VerifyContext(r.Context(), ck.Value)
	if err != nil {
		return nil, errNoSession
	}
	return &session{token: ck.Value, Operator: claims.ClientID, Scopes: strings.Fields(claims.Scope),
		Expires: time.Unix(claims.ExpiresAt, 0), CSRF: csrfToken(ck.Value)}, nil
}

// secure tells whether r came over TLS, to this server or to a trusted
// proxy in front of it.
func (c *Console) secure(r *http.Request) bool {
	return r.TLS != nil || strings.HasPrefix(c.cfg.Trust.BaseURL(r), "https://")
}

func (c *Console) setSession(w http.ResponseWriter, r *http.Request, token string, maxAge int) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: token, Path: Prefix, MaxAge: maxAge,
		HttpOnly: true, Secure: c.secure(r), SameSite: http.SameSiteStrictMode})
}

func (c *Console) clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: CookieName, Value: "", Path: Prefix, MaxAge: -1,
		HttpOnly: true, Secure: c.secure(r), SameSite: http.SameSiteStrictMode})
}

// sameOrigin refuses a state-changing request from another site: the
// browser's Sec-Fetch-Site, or else its Origin, must name this origin.
// A request with neither (not a browser's) is judged by its CSRF token
// alone.
func sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin" || site == "none"
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		return err == nil && u.Host == r.Host
	}
	return true
}

// checkPost admits a state-changing request of a session: the same
// origin, and the session's CSRF token in the form (compared in constant
// time).
func checkPost(r *http.Request, s *session) bool {
	if !sameOrigin(r) {
		return false
	}
	got := r.PostFormValue("csrf")
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(s.CSRF)) == 1
}

// newFormKey is a rendered form's key (the template function idem): 128
// random bits, hex, one per form each time a page is rendered.
func newFormKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// formKey is the form of a form key: what newFormKey makes, or another
// 16 to 64 URL-safe characters.
var formKey = regexp.MustCompile(`^[A-Za-z0-9_-]{16,64}$`)

// idempotencyKey is the Idempotency-Key of a write sent with the form key
// k: an HMAC of k under the session token, so the key is bound to the
// session as the CSRF token is (the same form sent in another session
// makes another key), and the admin API's sealed answer can be read back
// only by the session that sent it. A form sent twice (a double click, a
// reload of the answer) sends the same k, so the admin API replays the
// first answer (adminapi's idempotency, the one implementation) instead
// of changing anything a second time.
func idempotencyKey(token, k string) string {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("partnerapi console idempotency v1\x00" + k))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// answer is an admin API answer.
type answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// problem is an admin API problem (RFC 9457).
type problem struct {
	Status int    `json:"status"`
	Title  string `json:"title"`
	Detail string `json:"detail"`
	Code   string `json:"code"`
}

func (a answer) ok() bool { return a.Status >= 200 && a.Status < 300 }

func (a answer) problem() problem {
	var p problem
	if json.Unmarshal(a.Body, &p) != nil || p.Detail == "" {
		p = problem{Status: a.Status, Title: http.StatusText(a.Status), Detail: "the admin API answered " + http.StatusText(a.Status)}
	}
	p.Status = a.Status
	return p
}

// decode reads an answer's body into v.
func (a answer) decode(v any) error { return json.Unmarshal(a.Body, v) }

// recorder keeps an in-process answer.
type recorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *recorder) Write(p []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	return r.body.Write(p)
}

// inProcess makes a request to h on behalf of r: the same context (its
// request id and cancellation), remote address, Host, TLS state and
// forwarding headers, so that h sees the caller r's caller is (the audit
// records its address, the failure budget counts by it).
func inProcess(h http.Handler, r *http.Request, method, path string, header http.Header, body []byte) answer {
	req, err := http.NewRequestWithContext(r.Context(), method, path, bytes.NewReader(body))
	if err != nil {
		return answer{Status: http.StatusInternalServerError}
	}
	if body == nil {
		req.Body = http.NoBody
	}
	req.RemoteAddr, req.Host, req.TLS = r.RemoteAddr, r.Host, r.TLS
	for _, name := range []string{"X-Forwarded-For", "X-Forwarded-Proto", "X-Forwarded-Host", "User-Agent"} {
		if v := r.Header.Values(name); len(v) > 0 {
			req.Header[name] = v
		}
	}
	for k, v := range header {
		req.Header[k] = v
	}
	rec := &recorder{header: http.Header{}}
	h.ServeHTTP(rec, req)
	if rec.status == 0 {
		rec.status = http.StatusOK
	}
	return answer{Status: rec.status, Header: rec.header, Body: rec.body.Bytes()}
}

// api calls the admin API as the session's operator. A change with idem
// (the session's, set by action) carries it as its Idempotency-Key.
func (c *Console) api(r *http.Request, s *session, method, path string, body any, idem string) answer {
	h := http.Header{"Authorization": {"Bearer " + s.token}}
	var raw []byte
	if body != nil {
		var err error
		if raw, err = json.Marshal(body); err != nil {
			return answer{Status: http.StatusInternalServerError}
		}
		h.Set("Content-Type", "application/json")
	}
	if idem != "" {
		h.Set("Idempotency-Key", idem)
	}
	// A double click sends the form twice with one key: the second waits
	// for the first to finish (the API answers 409 idempotency_key_in_use
	// meanwhile) and shows its answer, replayed, so the page the browser
	// keeps is the one with the result (a secret included), never the 409.
	for wait := 0; ; wait++ {
		a := inProcess(c.deps.API, r, method, "/admin/v1"+path, h, raw)
		if idem == "" || a.Status != http.StatusConflict || a.problem().Code != "idempotency_key_in_use" || wait == idemWaits {
			return a
		}
		select {
		case <-r.Context().Done():
			return a
		case <-time.After(idemWait):
		}
	}
}

// A form sent again while its first sending runs is retried every
// idemWait, idemWaits times at most (the API's lock on a key lasts a
// minute at most; an operation takes milliseconds).
const (
	idemWait  = 100 * time.Millisecond
	idemWaits = 100
)
