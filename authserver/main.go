package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/partnerapi/authplatform/pkg/clients"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "authserver: "+oneLine(err))
		os.Exit(exitCode(err))
	}
}

// Exit statuses.
const (
	exitFailure       = 1 // the command failed
	exitUsage         = 2 // the command line is wrong
	exitNotReplicated = 3 // a change is on the primary, not confirmed by a replica
)

// exitCode maps a command's error to the process's exit status.
func exitCode(err error) int {
	var u usageError
	switch {
	case errors.As(err, &u):
		return exitUsage
	case errors.Is(err, clients.ErrNotReplicated):
		return exitNotReplicated
	}
	return exitFailure
}

// usageError is a command line mistake (exit status 2).
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, a ...any) error { return usageError{fmt.Sprintf(format, a...)} }

// oneLine joins a multi-line error (errors.Join) into one line.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}

const usage = `usage: authserver COMMAND [flags]

  serve [--addr A] [--keys FILE] [--issuer URL] [--audience A] [--trusted-proxies CIDRS]
  keys generate --out FILE [--alg EdDSA|ES256] [--rotate [--keep N] | --stage]
  keys promote --file FILE KID
  keys withdraw --file FILE KID   (reads REDIS_URL)
  keys list --file FILE
  orgs create --slug S --name N --environment sandbox|live
  orgs list
  clients create --org S --name N --audience pharma|hospital|psp_partner --scopes "..." [--rate-limit N]
  clients rotate-secret CLIENT_ID
  clients revoke CLIENT_ID
  clients list [--org S]
  clients show CLIENT_ID
  clients set-rate-limit CLIENT_ID N [--token]
  clients audit CLIENT_ID
  sandbox seed
  healthcheck [--url URL]

Every command but keys reads REDIS_URL; every command takes --json.`

// run is the whole program: main only supplies the process's environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) < 2 {
		fmt.Fprintln(stderr, usage)
		return usagef("no command given")
	}
	cmd, rest := args[1], args[2:]
	switch cmd {
	case "serve":
		return serve(ctx, rest, getenv, stdout, stderr)
	case "healthcheck":
		return healthcheck(ctx, rest, getenv, stdout)
	case "keys":
		if len(rest) > 0 && rest[0] == "withdraw" {
			return keysWithdraw(ctx, rest[1:], getenv, stdout)
		}
		return keysCommand(rest, stdout)
	case "orgs", "clients", "sandbox":
		return operatorCommand(ctx, cmd, rest, getenv, stdout)
	case "help", "-h", "--help":
		fmt.Fprintln(stdout, usage)
		return nil
	}
	return usagef("unknown command %q (run 'authserver help')", cmd)
}
