package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/buildinfo"
)

// TestMain lets the test binary be the resourceserver binary: with
// RESOURCESERVER_TEST_MAIN=1 it runs main.
func TestMain(m *testing.M) {
	if os.Getenv("RESOURCESERVER_TEST_MAIN") == "1" {
		main()
		return
	}
	os.Exit(m.Run())
}

func execResourceserver(t *testing.T, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	// GORACE: without the test's atexit_sleep_ms=0 (as CI's race-detector
	// run sets it) every process that exits 0 sleeps a second at its exit.
	cmd.Env = append([]string{"RESOURCESERVER_TEST_MAIN=1", "GORACE=" + os.Getenv("GORACE")}, env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		code = exitErr.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errOut.String(), code
}

// The process: help on stdout with exit 0, usage errors exit 2 with one
// line, a failed health check exits 1.
func TestProcess(t *testing.T) {
	want := `usage: resourceserver healthcheck [--url URL]

Exit 0 when the local /readyz answers 200 (container health checks without curl).

flags:
  --url string  URL that must answer 200 (default http://127.0.0.1:8081/readyz)
`
	for _, args := range [][]string{{"healthcheck", "--help"}, {"healthcheck", "-h"}, {"help", "healthcheck"}} {
		if stdout, stderr, code := execResourceserver(t, nil, args...); stdout != want || stderr != "" || code != 0 {
			t.Errorf("resourceserver %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout, stderr)
		}
	}
	stdout, stderr, code := execResourceserver(t, nil, "help")
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "usage: resourceserver COMMAND") ||
		!strings.Contains(stdout, "\n  serve [--addr A] [--metrics-addr A]") || !strings.Contains(stdout, "Exit status: 0 success, 1 runtime failure, 2 usage error.") {
		t.Errorf("help: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, tc := range []struct {
		env    []string
		args   []string
		stderr string
		code   int
	}{
		{nil, []string{"nope"}, "resourceserver: unknown command \"nope\" (run 'resourceserver help')\n", 2},
		{nil, []string{"serve", "extra"}, "resourceserver: serve takes 0 argument(s), got 1 (run 'resourceserver serve --help')\n", 2},
		{nil, []string{"serve", "--metrics-addr", "nowhere", "--base-url", "http://api.test"}, "resourceserver: invalid configuration: --metrics-addr (METRICS_ADDR) \"nowhere\": want host:port, :port or off\n", 2},
		{nil, []string{"healthcheck", "--url", "http://127.0.0.1:1/readyz"}, "resourceserver: healthcheck: probe http://127.0.0.1:1/readyz: Get \"http://127.0.0.1:1/readyz\": dial tcp 127.0.0.1:1: connect: connection refused\n", 1},
	} {
		stdout, stderr, code := execResourceserver(t, tc.env, tc.args...)
		if code != tc.code || stdout != "" || stderr != tc.stderr {
			t.Errorf("resourceserver %s: exit %d (want %d), stdout %q\nstderr %q\nwant   %q", strings.Join(tc.args, " "), code, tc.code, stdout, stderr, tc.stderr)
		}
	}
}

// --version prints the module version and VCS revision of the build.
func TestVersion(t *testing.T) {
	want := "resourceserver " + buildinfo.Read().String() + "\n"
	if stdout, stderr, code := execResourceserver(t, nil, "--version"); stdout != want || stderr != "" || code != 0 || !strings.Contains(stdout, " (revision ") {
		t.Errorf("resourceserver --version: exit %d, stdout %q (want %q), stderr %q", code, stdout, want, stderr)
	}
}
