package main

import (
	"strings"
	"testing"
)

// TestServeMaxAssertionLifetime: --max-assertion-lifetime
// (MAX_ASSERTION_LIFETIME) takes a duration up to a day; anything else is a
// usage error that says so.
func TestServeMaxAssertionLifetime(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	for value, want := range map[string]string{
		"soon": `--max-assertion-lifetime (MAX_ASSERTION_LIFETIME) "soon": want a duration such as 5m or 1h`,
		"48h":  "--max-assertion-lifetime (MAX_ASSERTION_LIFETIME) 48h0m0s: want at most 24h0m0s",
		"-1m":  "--max-assertion-lifetime (MAX_ASSERTION_LIFETIME) -1m0s: want at most 24h0m0s",
	} {
		_, err := h.run("serve", "--max-assertion-lifetime", value)
		if !isUsage(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("--max-assertion-lifetime %s: %v (usage: %v), want a usage error saying %q", value, err, isUsage(err), want)
		}
	}
	h.env["MAX_ASSERTION_LIFETIME"] = "soon"
	if _, err := h.run("serve"); !isUsage(err) || !strings.Contains(err.Error(), `"soon"`) {
		t.Errorf("MAX_ASSERTION_LIFETIME=soon: %v", err)
	}
}
