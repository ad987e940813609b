package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/partnerapi/authplatform/pkg/buildinfo"
)

// Exit statuses.
const (
	ExitOK      = 0
	ExitFailure = 1
	ExitUsage   = 2
)

// UsageError is a command line mistake: exit status 2.
type UsageError struct{ Msg string }

func (e UsageError) Error() string { return e.Msg }

// Usagef returns a UsageError.
func Usagef(format string, a ...any) error { return UsageError{fmt.Sprintf(format, a...)} }

// AsUsage turns err into a UsageError keeping its text (nil stays nil).
func AsUsage(err error) error {
	if err == nil {
		return nil
	}
	return UsageError{err.Error()}
}

// ExitCode is the exit status for err: 0 for nil, 2 for a UsageError, the
// code of the first entry of extra that err matches (errors.Is), else 1.
func ExitCode(err error, extra map[error]int) int {
	if err == nil {
		return ExitOK
	}
	var u UsageError
	if errors.As(err, &u) {
		return ExitUsage
	}
	for target, code := range extra {
		if errors.Is(err, target) {
			return code
		}
	}
	return ExitFailure
}

// OneLine joins a multi-line error (errors.Join, or a heading ending in ":"
// above indented lines) into one line: "a; b", "heading: a; b".
func OneLine(err error) string {
	lines := strings.Split(err.Error(), "\n")
	var b strings.Builder
	for i, l := range lines {
		l = strings.TrimSpace(l)
		if i > 0 {
			if strings.HasSuffix(lines[i-1], ":") {
				b.WriteString(" ")
			} else {
				b.WriteString("; ")
			}
		}
		b.WriteString(l)
	}
	return b.String()
}

// Env is what a command's action gets of the process.
type Env struct {
	Getenv func(string) string
	Stdout io.Writer
	Stderr io.Writer
}

// EnvOr returns the environment variable name's value from getenv, or def
// when it is unset or empty: the default of a flag that the environment may
// set.
func EnvOr(getenv func(string) string, name, def string) string {
	if v := getenv(name); v != "" {
		return v
	}
	return def
}

// Action runs a command with its positional arguments, after its flags were
// parsed into the variables Setup bound them to.
type Action func(ctx context.Context, args []string) error

// Command is one row of the command table.
type Command struct {
	// Name is the command, one or two words ("serve", "clients create").
	Name string
	// Synopsis shows its arguments and flags after the name, as usage
	// lines show them.
	Synopsis string
	// Summary says what it does, in a sentence or two.
	Summary string
	// Args is the number of positional arguments it takes.
	Args int
	// Setup declares the command's flags on fs (defaults may come from the
	// environment) and returns its action.
	Setup func(fs *flag.FlagSet, env Env) Action
}

// Program is a binary's command table.
type Program struct {
	// Name is the binary's name ("authserver").
	Name string
	// Commands are listed by help in this order.
	Commands []Command
	// Notes end the help listing (environment, exit statuses).
	Notes string
}

// Run runs the command named by args (args[0] is the program's name).
func (p *Program) Run(ctx context.Context, args []string, env Env) error {
	if len(args) < 2 {
		p.printList(env.Stderr)
		return Usagef("no command given")
	}
	words := args[1:]
	if words[0] == "help" || isHelp(words[0]) {
		return p.help(words[1:], env.Stdout)
	}
	if words[0] == "--version" || words[0] == "-version" {
		if len(words) > 1 {
			return Usagef("--version takes no arguments")
		}
		fmt.Fprintln(env.Stdout, p.Name+" "+buildinfo.Read().String())
		return nil
	}
	cmd, rest, err := p.find(words)
	if err != nil {
		if isGroup := p.group(words[0]); isGroup != nil && (len(words) == 1 || isHelp(words[1])) {
			if len(words) > 1 {
				p.printGroup(env.Stdout, words[0], isGroup)
				return nil
			}
			p.printGroup(env.Stderr, words[0], isGroup)
		}
		return err
	}
	fs := flag.NewFlagSet(p.Name+" "+cmd.Name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	action := cmd.Setup(fs, env)
	pos, err := parseFlags(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		p.printCommand(env.Stdout, cmd, fs)
		return nil
	}
	if err != nil {
		return Usagef("%s: %v (run '%s %s --help')", cmd.Name, err, p.Name, cmd.Name)
	}
	if len(pos) != cmd.Args {
		return Usagef("%s takes %d argument(s), got %d (run '%s %s --help')", cmd.Name, cmd.Args, len(pos), p.Name, cmd.Name)
	}
	return action(ctx, pos)
}

func isHelp(s string) bool { return s == "-h" || s == "-help" || s == "--help" }

// find returns the command words name (two words before one) and the
// arguments after them.
func (p *Program) find(words []string) (*Command, []string, error) {
	if len(words) > 1 {
		if c := p.lookup(words[0] + " " + words[1]); c != nil {
			return c, words[2:], nil
		}
	}
	if c := p.lookup(words[0]); c != nil {
		return c, words[1:], nil
	}
	if p.group(words[0]) != nil {
		if len(words) == 1 || isHelp(words[1]) {
			return nil, nil, Usagef("%s: missing subcommand (run '%s help %s')", words[0], p.Name, words[0])
		}
		return nil, nil, Usagef("unknown command %q (run '%s help %s')", words[0]+" "+words[1], p.Name, words[0])
	}
	return nil, nil, Usagef("unknown command %q (run '%s help')", words[0], p.Name)
}

func (p *Program) lookup(name string) *Command {
	for i := range p.Commands {
		if p.Commands[i].Name == name {
			return &p.Commands[i]
		}
	}
	return nil
}

// group returns the commands named "word ...", or nil.
func (p *Program) group(word string) []*Command {
	var cs []*Command
	for i := range p.Commands {
		if strings.HasPrefix(p.Commands[i].Name, word+" ") {
			cs = append(cs, &p.Commands[i])
		}
	}
	return cs
}

// help prints the list, a group or one command (help [COMMAND [SUBCOMMAND]]).
func (p *Program) help(words []string, w io.Writer) error {
	if len(words) == 0 {
		p.printList(w)
		return nil
	}
	cmd, rest, err := p.find(words)
	if err != nil {
		if g := p.group(words[0]); g != nil && len(words) == 1 {
			p.printGroup(w, words[0], g)
			return nil
		}
		return err
	}
	if len(rest) > 0 {
		return Usagef("unknown command %q (run '%s help')", strings.Join(words, " "), p.Name)
	}
	fs := flag.NewFlagSet(p.Name+" "+cmd.Name, flag.ContinueOnError)
	// Flag defaults from the environment must not be printed (a REDIS_URL
	// with a password): help shows the defaults of an empty environment.
	cmd.Setup(fs, Env{Getenv: func(string) string { return "" }, Stdout: io.Discard, Stderr: io.Discard})
	p.printCommand(w, cmd, fs)
	return nil
}

func (p *Program) printList(w io.Writer) {
	command := "COMMAND"
	for _, c := range p.Commands {
		if strings.Contains(c.Name, " ") {
			command = "COMMAND [SUBCOMMAND]"
			break
		}
	}
	fmt.Fprintf(w, "usage: %s %s [ARGUMENTS] [FLAGS]\n\ncommands:\n", p.Name, command)
	for _, c := range p.Commands {
		fmt.Fprintf(w, "  %s\n      %s\n", strings.TrimSpace(c.Name+" "+c.Synopsis), c.Summary)
	}
	fmt.Fprintf(w, "\nRun '%s %s --help' (or '%s help %s') for a command's flags, '%s --version' for the build.\n", p.Name, command, p.Name, command, p.Name)
	if p.Notes != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimSpace(p.Notes))
	}
}

func (p *Program) printGroup(w io.Writer, word string, cs []*Command) {
	fmt.Fprintf(w, "usage: %s %s SUBCOMMAND [ARGUMENTS] [FLAGS]\n\nsubcommands:\n", p.Name, word)
	for _, c := range cs {
		fmt.Fprintf(w, "  %s\n      %s\n", strings.TrimSpace(c.Name+" "+c.Synopsis), c.Summary)
	}
	fmt.Fprintf(w, "\nRun '%s %s SUBCOMMAND --help' for a subcommand's flags.\n", p.Name, word)
}

// printCommand prints one command's usage, summary and flags.
func (p *Program) printCommand(w io.Writer, c *Command, fs *flag.FlagSet) {
	fmt.Fprintf(w, "usage: %s %s\n\n%s\n", p.Name, strings.TrimSpace(c.Name+" "+c.Synopsis), c.Summary)
	if hasFlags(fs) {
		fmt.Fprint(w, "\nflags:\n")
		PrintFlags(w, fs)
	}
}

func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// PrintFlags prints fs's flags as every command's help lists them, one a
// line, sorted: "  --name kind   usage (default D)", the default left out
// when it is empty, false or 0. A program with a flag set of its own
// (deploy/local) prints its -h with it.
func PrintFlags(w io.Writer, fs *flag.FlagSet) {
	var flags []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) { flags = append(flags, f) })
	sort.Slice(flags, func(i, j int) bool { return flags[i].Name < flags[j].Name })
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, f := range flags {
		kind, usage := flag.UnquoteUsage(f)
		name := "--" + f.Name
		if kind != "" {
			name += " " + kind
		}
		if f.DefValue != "" && f.DefValue != "false" && f.DefValue != "0" {
			usage += fmt.Sprintf(" (default %s)", f.DefValue)
		}
		fmt.Fprintf(tw, "  %s\t%s\n", name, usage)
	}
	tw.Flush()
}

// parseFlags parses flags placed before, between or after positional
// arguments (package flag stops at the first positional one) and returns
// the positional arguments. "--" ends the flags.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return positional, nil
		}
		rest := fs.Args()
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(positional, rest...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}
