package main

import (
	"flag"
	"io"
)

// newFlags returns a flag set that reports errors as values, not on stderr.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return fs
}

// parseFlags parses flags placed before, between or after positional
// arguments (flag stops at the first positional one) and returns the
// positional arguments. Everything after "--" is positional: a key id may
// start with "-" (kids are base64url).
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, usagef("%s: %v", fs.Name(), err)
		}
		rest := fs.Args()
		// flag.Parse consumed a "--" that ended the flags: what follows is
		// positional, whatever it looks like.
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(positional, rest...), nil
		}
		if len(rest) == 0 {
			return positional, nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

// envOr returns the environment variable's value, or def when unset.
func envOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}
