package main

import (
	"context"
	"fmt"
	"io"

	"github.com/partnerapi/authplatform/pkg/httpserver"
)

// healthcheck: authserver healthcheck [--url URL]. For container health
// checks in images without a shell or curl: exits 0 when URL answers 200.
func healthcheck(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fl := newFlags("healthcheck")
	port := envOr(getenv, "HEALTHCHECK_PORT", "8080")
	url := fl.String("url", "http://127.0.0.1:"+port+"/readyz", "URL that must answer 200")
	if pos, err := parseFlags(fl, args); err != nil {
		return err
	} else if len(pos) > 0 {
		return usagef("healthcheck takes no arguments")
	}
	if err := httpserver.Probe(ctx, *url); err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}
