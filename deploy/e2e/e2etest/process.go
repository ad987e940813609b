//go:build unix

package e2etest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/logtest"
)

// StartTimeout bounds the wait for a process to be ready.
const StartTimeout = 30 * time.Second

// RequireCommand fails the test under CI=true when name is not installed,
// and skips it otherwise.
func RequireCommand(t testing.TB, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed and CI=true forbids skipping (.ci/run installs it from Debian packages)", name)
		}
		t.Skipf("%s is not installed", name)
	}
}

// root is the module's root directory, asked of the go command once per
// test binary (each `go env` is a process of its own).
var root struct {
	once sync.Once
	dir  string
	err  error
}

// RepoRoot is the module's root directory.
func RepoRoot(t testing.TB) string {
	t.Helper()
	root.once.Do(func() {
		out, err := exec.Command("go", "env", "GOMOD").Output()
		if gomod := strings.TrimSpace(string(out)); err == nil && gomod != "" {
			root.dir = filepath.Dir(gomod)
		} else {
			root.err = fmt.Errorf("go env GOMOD: %v", err)
		}
	})
	if root.err != nil {
		t.Fatal(root.err)
	}
	return root.dir
}

// built holds the directory of the binaries, built once per test binary.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// BuildServers builds authserver and resourceserver once per test binary
// and returns their directory.
//
// They are built with the test binaries' build configuration (cgo as this
// machine has it, paths not trimmed, no build tags, no profile), not the
// Dockerfile's (CGO_ENABLED=0 -trimpath -tags grpcnotrace -pgo): each of
// those settings changes every package's build ID, so a build that used
// them compiles the whole dependency tree once more on a fresh machine
// (deploy/docs and deploy/e2e/adminholes waited minutes on it there);
// with the tests' configuration the same build links only. What the
// Dockerfile's settings change (a static binary; gRPC without its trace
// pages; the release profiles) is tested on the shipped build:
// resourceserver's TestBinaryLinksNoRendering and deploy/compose-ci.
//
// The directory is kept between runs, in the user's cache
// (os.UserCacheDir), one per checkout: go build leaves a binary whose
// build ID says it is up to date as it is, so a run on unchanged sources
// links nothing. A lock (lockBuild) serialises the builds of the test
// binaries that go test runs at once, so that one does not replace a
// binary while another is checking or writing it.
func BuildServers(t testing.TB) string {
	t.Helper()
	built.once.Do(func() { built.dir, built.err = buildServers(RepoRoot(t)) })
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

// CacheDir is the directory of the end-to-end suites' cache entries of
// kind (the built servers, the Node.js clients' packages) under the
// user's cache (os.UserCacheDir; the temporary directory without one).
func CacheDir(kind string) string {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	return filepath.Join(cache, "authplatform-e2e", kind)
}

// buildServers builds both servers into the cache directory of the
// checkout at repo (BuildServers).
func buildServers(repo string) (string, error) {
	sum := sha256.Sum256([]byte(repo))
	dir := filepath.Join(CacheDir("bin"), hex.EncodeToString(sum[:8]))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	unlock, err := lockBuild(filepath.Join(dir, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	cmd := exec.Command("go", "build", "-ldflags=-s -w", "-o", dir+string(filepath.Separator), "./authserver", "./resourceserver")
	cmd.Dir = repo
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./authserver ./resourceserver: %v\n%s", err, out)
	}
	return dir, nil
}

// lockBuild takes an exclusive lock on the file at path (flock(2)),
// waiting for another process's, and returns its release. The lock is
// the kernel's: it goes with the process that holds it, however that
// process ends.
func lockBuild(path string) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return func() { f.Close() }, nil
}

// BaseEnv is the environment every process starts from: none of the test's
// own (a REDIS_URL meant for other tests must not leak in) but
// REDIS_AUTOPIPELINE (AutoPipelineEnv).
func BaseEnv(home string) []string {
	return append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}, autoPipelineEnv()...)
}

// Process is a child process in a process group of its own, its output
// kept in memory.
type Process struct {
	Name string
	Cmd  *exec.Cmd
	// Out is its stdout and stderr.
	Out    *logtest.Sink
	exited chan struct{}
	once   sync.Once
}

// StartProcess starts bin; the process group is killed when the test ends,
// and the end of the output is logged if the test failed.
func StartProcess(t testing.TB, name string, env []string, bin string, args ...string) *Process {
	t.Helper()
	p := &Process{Name: name, Out: &logtest.Sink{}, exited: make(chan struct{})}
	p.Cmd = exec.Command(bin, args...)
	p.Cmd.Env = env
	p.Cmd.Stdout, p.Cmd.Stderr = p.Out, p.Out
	p.Cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = p.Cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.Kill()
		if t.Failed() {
			t.Logf("--- output of %s (end) ---\n%s", name, p.Tail(8<<10))
		}
	})
	return p
}

// Running reports whether the process has not exited.
func (p *Process) Running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// Kill sends SIGKILL to the process group (a crash, no graceful shutdown)
// and waits for the process to be reaped.
func (p *Process) Kill() {
	p.once.Do(func() {
		if p.Running() {
			_ = syscall.Kill(-p.Cmd.Process.Pid, syscall.SIGKILL)
		}
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
		}
	})
}

// Stop sends SIGTERM to the process (a graceful shutdown: it stops
// accepting and lets in-flight requests finish) and waits up to within for
// it to exit, failing the test if it does not or exits with an error.
func (p *Process) Stop(t testing.TB, within time.Duration) {
	t.Helper()
	if err := p.Cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM %s: %v", p.Name, err)
	}
	select {
	case <-p.exited:
	case <-time.After(within):
		t.Fatalf("%s still running %v after SIGTERM", p.Name, within)
	}
	if !p.Cmd.ProcessState.Success() {
		t.Fatalf("%s exited after SIGTERM with %v:\n%s", p.Name, p.Cmd.ProcessState, p.Tail(4<<10))
	}
}

// Tail is the last n bytes of the output.
func (p *Process) Tail(n int) string {
	s := p.Out.String()
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}

// AccessRecord returns the access log record ("msg":"request") of the
// request with the given id, if the process logged it.
func (p *Process) AccessRecord(id string) (map[string]any, bool) {
	for _, line := range strings.Split(p.Out.String(), "\n") {
		if !strings.Contains(line, id) {
			continue
		}
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["msg"] == "request" && rec["request_id"] == id {
			return rec, true
		}
	}
	return nil, false
}

// WaitOK polls url until it answers 200, failing the test after
// StartTimeout or as soon as one of procs has exited.
func WaitOK(t testing.TB, url string, procs ...*Process) {
	t.Helper()
	WaitOKWith(t, &http.Client{Timeout: time.Second}, url, procs...)
}

// WaitOKWith is WaitOK over client (an https URL's, with the roots that
// verify the server).
func WaitOKWith(t testing.TB, client *http.Client, url string, procs ...*Process) {
	t.Helper()
	deadline := time.Now().Add(StartTimeout)
	var last string
	for {
		resp, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			last = resp.Status
		} else {
			last = err.Error()
		}
		for _, p := range procs {
			if !p.Running() {
				t.Fatalf("%s exited while waiting for %s:\n%s", p.Name, url, p.Tail(8<<10))
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer 200 within %v; last answer: %s", url, StartTimeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
