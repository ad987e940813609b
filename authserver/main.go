package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/partnerapi/authplatform/pkg/cli"
	"github.com/partnerapi/authplatform/pkg/clients"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "authserver: "+cli.OneLine(err))
	}
	os.Exit(exitCode(err))
}

// ExitNotReplicated is the exit status of a credential change written on
// the Redis primary but not confirmed by a replica: a failover may still
// undo it, so it is not reported as done. It is in force now: running the
// command again would make a second client or another secret
// (deploy/docs/operator-guide.md, "Exit status").
const ExitNotReplicated = 3

// exitCode: 0 success, 1 runtime failure, 2 usage error, 3 not replicated.
func exitCode(err error) int {
	return cli.ExitCode(err, map[error]int{clients.ErrNotReplicated: ExitNotReplicated})
}

// notes end `authserver help`.
const notes = `Every command but keys, serve and healthcheck reads REDIS_URL (and REDIS_KEY_PREFIX).
Operator commands print for people, or JSON with --json (deploy/docs/operator-guide.md).
Exit status: 0 success, 1 runtime failure, 2 usage error, 3 change written on the
Redis primary but not confirmed by a replica in time: it is in force now (keep a
printed secret), but a failover may still undo it. Do not run the command again (a
second create makes a second client, a second rotation another secret); once a
replica answers, 'authserver clients show ID' tells whether the change survived.`

// run is the whole program: main only supplies the process's environment.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	p := &cli.Program{Name: "authserver", Commands: commands(), Notes: notes}
	return p.Run(ctx, args, cli.Env{Getenv: getenv, Stdout: stdout, Stderr: stderr})
}

// usageError and usagef are cli's, by their short local names.
type usageError = cli.UsageError

func usagef(format string, a ...any) error { return cli.Usagef(format, a...) }

// oneLine joins a multi-line error into one line.
func oneLine(err error) string { return cli.OneLine(err) }
