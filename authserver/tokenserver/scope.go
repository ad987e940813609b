package tokenserver

import "strings"

// maxScopeTokens bounds the scopes one request may name; there are four.
const maxScopeTokens = 16

// requestedScope reads a token request's scope (RFC 6749 section 3.3): nil
// when omitted or blank (every scope the client holds), and bad when it
// cannot be granted whatever the client holds (too many or malformed
// scope-tokens). Whether the client holds them is decided after its secret
// is checked, so a wrong secret never learns what a client holds.
func requestedScope(s string) (scope []string, bad bool) {
	if strings.Trim(s, " ") == "" {
		return nil, false
	}
	parts := strings.Split(s, " ")
	if len(parts) > maxScopeTokens {
		return nil, true
	}
	scope = []string{}
	for _, p := range parts {
		if p == "" {
			continue
		}
		if !validScopeToken(p) {
			return nil, true
		}
		scope = append(scope, p)
	}
	return scope, false
}

// validScopeToken: scope-token = 1*NQCHAR (RFC 6749 section 3.3).
func validScopeToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x21 || c == 0x22 || c == 0x5c || c > 0x7e {
			return false
		}
	}
	return true
}
