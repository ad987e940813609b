package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/partnerapi/authplatform/pkg/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Getenv, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "resourceserver: "+cli.OneLine(err))
	}
	os.Exit(cli.ExitCode(err, nil))
}

// notes end `resourceserver help`.
const notes = `Every flag of serve has an environment variable, used when the flag is not given.
Exit status: 0 success, 1 runtime failure, 2 usage error.`

// run is the whole program: args as in os.Args, the environment through
// getenv. It returns when the command is done or, for serve, when ctx is
// cancelled (SIGINT, SIGTERM) and the server has shut down.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	p := &cli.Program{Name: "resourceserver", Commands: commands(), Notes: notes}
	return p.Run(ctx, args, cli.Env{Getenv: getenv, Stdout: stdout, Stderr: stderr})
}
