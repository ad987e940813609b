package httpserver

import (
	"context"
	"flag"

	"github.com/partnerapi/authplatform/pkg/cli"
)

// HealthcheckCommand is the setup of both binaries' `healthcheck [--url
// URL]` command: it probes /readyz on HEALTHCHECK_PORT, else the port of
// ADDR, else defaultPort (ProbeURL), and exits 0 when it answers 200.
func HealthcheckCommand(defaultPort string) func(fs *flag.FlagSet, env cli.Env) cli.Action {
	return func(fs *flag.FlagSet, env cli.Env) cli.Action {
		url := fs.String("url", ProbeURL(env.Getenv, defaultPort), "URL that must answer 200")
		return func(ctx context.Context, _ []string) error {
			return Healthcheck(ctx, *url, env.Stdout)
		}
	}
}
