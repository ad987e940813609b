package cli

import (
	"flag"
	"fmt"
	"strconv"
	"time"
)

// EnvBool reads the boolean environment variable name through getenv:
// def when it is unset or empty, else its value as strconv.ParseBool reads
// it (1, t, T, TRUE, true, True, 0, f, F, FALSE, false, False). Any other
// value is a UsageError naming the variable: never silently false. It is
// the one way every boolean environment variable is read.
func EnvBool(getenv func(string) string, name string, def bool) (bool, error) {
	v := getenv(name)
	if v == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return def, Usagef("%s=%q: want true or false (or 1 or 0)", name, v)
	}
	return b, nil
}

// EnvFlags declares a command's flags whose defaults come from environment
// variables (a flag given wins over its variable), and keeps what the
// environment got wrong for the action to report (Err): a flag's Setup
// cannot fail.
type EnvFlags struct {
	FS     *flag.FlagSet
	Getenv func(string) string
	errs   []error
}

// String declares --name, defaulting to the variable env, else def. The
// usage gets " (env ENV)".
func (f *EnvFlags) String(p *string, name, env, def, usage string) {
	f.FS.StringVar(p, name, EnvOr(f.Getenv, env, def), usage+" (env "+env+")")
}

// Bool declares the boolean --name, defaulting to the variable env (read
// by EnvBool), else def. The usage gets " (env ENV=true)".
func (f *EnvFlags) Bool(p *bool, name, env string, def bool, usage string) {
	v, err := EnvBool(f.Getenv, env, def)
	if err != nil {
		f.errs = append(f.errs, err)
	}
	f.FS.BoolVar(p, name, v, fmt.Sprintf("%s (env %s=%t)", usage, env, !def))
}

// Int declares --name, a whole number, defaulting to the variable env, else
// def. An env value that is not a number is reported by Err.
func (f *EnvFlags) Int(p *int, name, env string, def int, usage string) {
	v := def
	if s := f.Getenv(env); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			f.errs = append(f.errs, Usagef("%s=%q: want a whole number", env, s))
		} else {
			v = n
		}
	}
	f.FS.IntVar(p, name, v, usage+" (env "+env+")")
}

// Duration declares --name, a Go duration (5m, 1h), defaulting to the
// variable env, else def. A value that is not a duration, from the flag or
// the variable, is a usage error naming both. Put the word `duration` in
// backquotes in usage: it names the value in --help.
func (f *EnvFlags) Duration(p *time.Duration, name, env string, def time.Duration, usage string) {
	*p = def
	v := &durationFlag{p: p, name: name, env: env}
	if s := f.Getenv(env); s != "" {
		if err := v.Set(s); err != nil {
			f.errs = append(f.errs, err)
		}
	}
	f.FS.Var(v, name, usage+" (env "+env+")")
}

// Var declares --name as v, set first from the variable env when it is
// not empty; a value v refuses there is reported by Err. The usage gets
// " (env ENV)".
func (f *EnvFlags) Var(v flag.Value, name, env, usage string) {
	if s := f.Getenv(env); s != "" {
		if err := v.Set(s); err != nil {
			f.errs = append(f.errs, Usagef("%s=%q: %v", env, s, err))
		}
	}
	f.FS.Var(v, name, usage+" (env "+env+")")
}

// durationFlag is a flag.Value whose parse error says how to write one.
type durationFlag struct {
	p         *time.Duration
	name, env string
}

func (d *durationFlag) String() string {
	if d == nil || d.p == nil {
		return ""
	}
	return d.p.String()
}

func (d *durationFlag) Set(s string) error {
	v, err := time.ParseDuration(s)
	if err != nil {
		return Usagef("--%s (%s) %q: want a duration such as 5m or 1h", d.name, d.env, s)
	}
	*d.p = v
	return nil
}

// Err returns the environment's invalid values, as one UsageError, or nil.
func (f *EnvFlags) Err() error {
	if len(f.errs) == 0 {
		return nil
	}
	msg := f.errs[0].Error()
	for _, e := range f.errs[1:] {
		msg += "; " + e.Error()
	}
	return UsageError{msg}
}
