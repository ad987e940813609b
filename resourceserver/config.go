package main

import (
	"errors"
	"flag"
	"fmt"
	"net/url"

	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/serveconfig"
)

// Defaults (contract notes: binaries, flags and environment). /metrics
// listens on loopback only, off the partner-facing port (compose sets
// METRICS_ADDR=:9081).
var defaults = serveconfig.Defaults{
	Addr:        ":8081",
	MetricsAddr: "127.0.0.1:9081",
	Issuer:      "http://localhost:8080",
	Audience:    "partner-api",
}

// defaultJWKSURL is the token service's key set on its default address.
const defaultJWKSURL = "http://localhost:8080/.well-known/jwks.json"

// config is the configuration of serve: the shared part (serveconfig) and
// the resource server's own, each field from its flag, else its
// environment variable, else its default.
type config struct {
	serveconfig.Config
	JWKSURL string // --jwks-url, JWKS_URL
	BaseURL string // --base-url, BASE_URL: the public base URL (DPoP proofs' htu, the documentation's links); required
}

// declareFlags binds serve's flags to cfg, with defaults from the
// environment; finish completes cfg after parsing, or reports what the
// environment got wrong.
func (cfg *config) declareFlags(fs *flag.FlagSet, getenv func(string) string) (finish func() error) {
	f := &cli.EnvFlags{FS: fs, Getenv: getenv}
	cfg.Declare(f, defaults)
	f.String(&cfg.JWKSURL, "jwks-url", "JWKS_URL", defaultJWKSURL, "the token service's JWKS")
	f.String(&cfg.BaseURL, "base-url", "BASE_URL", "", "public base URL partners call (required): DPoP proofs' htu, and the documentation's {base_url} and links")
	return func() error {
		if err := f.Err(); err != nil {
			return err
		}
		cfg.Finish(getenv)
		return nil
	}
}

// problems are the resource server's own configuration problems, reported
// with the shared ones (serveconfig.Config.Check).
func (c config) problems() []error {
	var errs []error
	if u, err := url.Parse(c.JWKSURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("--jwks-url (JWKS_URL) %q: want an absolute http or https URL", c.JWKSURL))
	}
	if c.BaseURL == "" {
		// Issue 59 point 8: never the request's Host.
		errs = append(errs, errors.New("--base-url (BASE_URL) is required: the public base URL partners call (e.g. https://api.example.com), which a DPoP proof's htu must name (RFC 9449 section 4.3) and the documentation's links use"))
	} else if u, err := url.Parse(c.BaseURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("--base-url (BASE_URL) %q: want an absolute http or https URL", c.BaseURL))
	}
	return errs
}
