package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
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
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return usagef("healthcheck: bad --url: %v", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %d", *url, resp.StatusCode)
	}
	fmt.Fprintln(stdout, "ok")
	return nil
}
