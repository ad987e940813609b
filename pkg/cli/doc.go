// Package cli runs the command lines of both binaries from one table of
// commands (name, synopsis, flags, action), which also gives every command
// its help: "PROGRAM help" lists them all, and "PROGRAM COMMAND [SUBCOMMAND]
// --help" (or -h) prints one command's usage and flags on stdout and
// succeeds.
//
// Exit statuses (ExitCode): 0 success, 1 runtime failure, 2 usage error (a
// UsageError: unknown command or flag, wrong arguments, invalid settings),
// and any further codes a program maps from its own errors (authserver: 3
// when a credential change was written on the Redis primary but no replica
// confirmed it).
package cli
