package e2etest

import (
	"encoding/base64"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// Header adds a value of a request header (twice: two values).
func Header(name, value string) func(*http.Request) {
	return func(r *http.Request) { r.Header.Add(name, value) }
}

// Basic sets HTTP Basic credentials, form-encoded first as RFC 6749
// section 2.3.1 asks of client credentials.
func Basic(id, secret string) func(*http.Request) {
	return BasicRaw(url.QueryEscape(id) + ":" + url.QueryEscape(secret))
}

// BasicRaw sends userpass base64-encoded as it is, however malformed.
func BasicRaw(userpass string) func(*http.Request) {
	return Header("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(userpass)))
}

// Bearer sets a bearer token (RFC 6750 section 2.1).
func Bearer(token string) func(*http.Request) { return Header("Authorization", "Bearer "+token) }

// Form encodes key, value pairs as a form body, in the order given.
func Form(kv ...string) string {
	var b []byte
	for i := 0; i+1 < len(kv); i += 2 {
		if i > 0 {
			b = append(b, '&')
		}
		b = append(b, url.QueryEscape(kv[i])...)
		b = append(b, '=')
		b = append(b, url.QueryEscape(kv[i+1])...)
	}
	return string(b)
}

// Answer is what a server answered: its status, headers and body.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Do sends method url over hc, with body as form fields when it is not
// empty, each of mods applied to the request, and returns the answer; a
// request that gets no answer fails t.
func Do(t testing.TB, hc *http.Client, method, url, body string, mods ...func(*http.Request)) Answer {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, m := range mods {
		m(req)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", method, url, err)
	}
	return Answer{resp.StatusCode, resp.Header, b}
}
