package cli

import (
	"errors"
	"flag"
	"io"
	"testing"
)

// Every boolean variable reads as strconv.ParseBool does: 1 and TRUE are
// true, never silently false; anything else is a usage error naming it.
func TestEnvBool(t *testing.T) {
	for _, tc := range []struct {
		value   string
		def     bool
		want    bool
		wantErr string
	}{
		{"", false, false, ""},
		{"", true, true, ""},
		{"true", false, true, ""},
		{"1", false, true, ""},
		{"TRUE", false, true, ""},
		{"t", false, true, ""},
		{"false", true, false, ""},
		{"0", true, false, ""},
		{"FALSE", true, false, ""},
		{"yes", false, false, `X_FLAG="yes": want true or false (or 1 or 0)`},
		{"on", true, true, `X_FLAG="on": want true or false (or 1 or 0)`},
	} {
		got, err := EnvBool(func(string) string { return tc.value }, "X_FLAG", tc.def)
		var u UsageError
		switch {
		case tc.wantErr == "" && err != nil:
			t.Errorf("%q: %v", tc.value, err)
		case tc.wantErr != "" && (!errors.As(err, &u) || err.Error() != tc.wantErr):
			t.Errorf("%q: error %v, want usage error %q", tc.value, err, tc.wantErr)
		case got != tc.want:
			t.Errorf("%q (default %v) = %v, want %v", tc.value, tc.def, got, tc.want)
		}
	}
}

// EnvFlags: the environment sets the defaults, a flag given wins, and what
// the environment got wrong is reported together, as a usage error.
func TestEnvFlags(t *testing.T) {
	env := map[string]string{"S": "from-env", "B": "1", "N": "7", "BAD_B": "maybe", "BAD_N": "x"}
	getenv := func(k string) string { return env[k] }
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f := &EnvFlags{FS: fs, Getenv: getenv}
	var s, s2 string
	var b, b2 bool
	var n, n2 int
	f.String(&s, "s", "S", "def", "a string")
	f.String(&s2, "s2", "UNSET", "def", "a string")
	f.Bool(&b, "b", "B", false, "a bool")
	f.Bool(&b2, "b2", "BAD_B", false, "a bool")
	f.Int(&n, "n", "N", 0, "an int")
	f.Int(&n2, "n2", "BAD_N", 3, "an int")
	if err := fs.Parse([]string{"--s2", "given"}); err != nil {
		t.Fatal(err)
	}
	if s != "from-env" || s2 != "given" || !b || b2 || n != 7 || n2 != 3 {
		t.Errorf("s=%q s2=%q b=%v b2=%v n=%d n2=%d", s, s2, b, b2, n, n2)
	}
	var u UsageError
	if err := f.Err(); !errors.As(err, &u) || err.Error() != `BAD_B="maybe": want true or false (or 1 or 0); BAD_N="x": want a whole number` {
		t.Errorf("Err() = %v", err)
	}
	if u := fs.Lookup("b").Usage; u != "a bool (env B=true)" {
		t.Errorf("usage %q", u)
	}
}
