package main

import (
	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/serveconfig"
)

// commands is the table of every resourceserver command: `resourceserver
// help` lists it, and each row gives its command's --help.
func commands() []cli.Command {
	return []cli.Command{
		{Name: "serve", Synopsis: "[--addr A] [--metrics-addr A] [--jwks-url URL] [--issuer URL] [--audience A] [--trusted-proxies CIDRS] [--log-level L] --base-url URL [--redis-autopipeline]",
			Summary: "Answer the partner API (GET /api/v1/me/) and the documentation, and serve metrics on --metrics-addr.",
			Setup:   serveCommand},
		{Name: "healthcheck", Synopsis: "[--url URL]",
			Summary: "Exit 0 when the local /readyz answers 200 (container health checks without curl).",
			Setup:   serveconfig.HealthcheckCommand("8081")},
	}
}
