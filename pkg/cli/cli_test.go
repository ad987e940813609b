package cli

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"testing"
)

func TestOneLine(t *testing.T) {
	for err, want := range map[error]string{
		errors.New("plain"):                                      "plain",
		errors.Join(errors.New("a"), errors.New("b")):            "a; b",
		errors.New("invalid configuration:\n  x: bad\n  y: bad"): "invalid configuration: x: bad; y: bad",
	} {
		if got := OneLine(err); got != want {
			t.Errorf("OneLine(%q) = %q, want %q", err, got, want)
		}
	}
}

// A program of two commands: flags anywhere, "--" before a negative
// argument, help on stdout, usage errors as UsageError.
func TestProgram(t *testing.T) {
	var got []string
	p := &Program{Name: "prog", Commands: []Command{
		{Name: "a b", Synopsis: "N [--v]", Summary: "Does a b.", Args: 1, Setup: func(fs *flag.FlagSet, env Env) Action {
			v := fs.Bool("v", false, "verbose")
			return func(_ context.Context, args []string) error {
				got = append(args, fmt.Sprint(*v))
				return nil
			}
		}},
	}}
	var out, errOut bytes.Buffer
	env := Env{Getenv: func(string) string { return "" }, Stdout: &out, Stderr: &errOut}
	for args, want := range map[string][]string{
		"a b 1 --v": {"1", "true"},
		"a b --v 2": {"2", "true"},
		"a b -- -3": {"-3", "false"},
	} {
		got = nil
		if err := p.Run(context.Background(), append([]string{"prog"}, splitWords(args)...), env); err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v %v, want %v", args, err, got, want)
		}
	}
	for args, want := range map[string]string{
		"a":       "a: missing subcommand (run 'prog help a')",
		"a c":     `unknown command "a c" (run 'prog help a')`,
		"x":       `unknown command "x" (run 'prog help')`,
		"a b":     "a b takes 1 argument(s), got 0 (run 'prog a b --help')",
		"a b 1 2": "a b takes 1 argument(s), got 2 (run 'prog a b --help')",
		"a b -x":  "a b: flag provided but not defined: -x (run 'prog a b --help')",
	} {
		err := p.Run(context.Background(), append([]string{"prog"}, splitWords(args)...), env)
		var u UsageError
		if !errors.As(err, &u) || err.Error() != want || ExitCode(err, nil) != ExitUsage {
			t.Errorf("%s: %v, want usage error %q", args, err, want)
		}
	}
	out.Reset()
	if err := p.Run(context.Background(), []string{"prog", "a", "b", "--help"}, env); err != nil {
		t.Fatal(err)
	}
	if want := "usage: prog a b N [--v]\n\nDoes a b.\n\nflags:\n  --v  verbose\n"; out.String() != want {
		t.Errorf("help:\n%q\nwant\n%q", out.String(), want)
	}
}

func splitWords(s string) []string {
	var out []string
	for _, w := range bytes.Fields([]byte(s)) {
		out = append(out, string(w))
	}
	return out
}
