//go:build unix

package topology

import (
	"bytes"
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

	"github.com/partnerapi/authplatform/pkg/redistest"
)

// startTimeout bounds the wait for a process to be ready.
const startTimeout = 30 * time.Second

// requireCommand fails the test under CI=true when name is not installed,
// and skips it otherwise.
func requireCommand(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is not installed and CI=true forbids skipping (.ci/run installs it from Debian packages)", name)
		}
		t.Skipf("%s is not installed", name)
	}
}

// repoRoot is the module's root directory.
func repoRoot(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		t.Fatalf("go env GOMOD: %v", err)
	}
	return filepath.Dir(strings.TrimSpace(string(out)))
}

// built holds the binaries built once for every test of the package; the
// directory is removed by TestMain.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// builtServers builds authserver and resourceserver as the Dockerfile does
// (static, trimmed), once per test run, and returns their directory.
func builtServers(t *testing.T) string {
	t.Helper()
	built.once.Do(func() {
		built.dir, built.err = os.MkdirTemp("", "topology-bin-")
		if built.err != nil {
			return
		}
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", built.dir+string(filepath.Separator), "./authserver", "./resourceserver")
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			built.err = fmt.Errorf("go build ./authserver ./resourceserver: %v\n%s", err, out)
		}
	})
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.dir
}

func TestMain(m *testing.M) {
	code := redistest.RunMain(m)
	if built.dir != "" {
		_ = os.RemoveAll(built.dir)
	}
	os.Exit(code)
}

// baseEnv is the environment every process starts from: none of the test's
// own (a REDIS_URL meant for other tests must not leak in).
func baseEnv(home string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home}
}

// process is a child process in a process group of its own, its output
// kept in memory.
type process struct {
	name   string
	cmd    *exec.Cmd
	out    *output
	exited chan struct{}
	once   sync.Once
}

// startProcess starts bin; the process group is killed when the test ends,
// and the output is logged if the test failed.
func startProcess(t *testing.T, name string, env []string, bin string, args ...string) *process {
	t.Helper()
	p := &process{name: name, out: &output{}, exited: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = env
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		_ = p.cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		p.kill()
		if t.Failed() {
			t.Logf("--- output of %s (end) ---\n%s", name, p.out.tail(8<<10))
		}
	})
	return p
}

// running reports whether the process has not exited.
func (p *process) running() bool {
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL to the process group (a crash, no graceful shutdown)
// and waits for the process to be reaped.
func (p *process) kill() {
	p.once.Do(func() {
		if p.running() {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		}
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
		}
	})
}

// accessRecord returns the access log record ("msg":"request") of the
// request with the given id, if the process logged it.
func (p *process) accessRecord(id string) (map[string]any, bool) {
	for _, line := range strings.Split(p.out.String(), "\n") {
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

// output is a process's stdout and stderr.
type output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *output) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(b)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// tail is the last n bytes of the output.
func (o *output) tail(n int) string {
	s := o.String()
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return s
}

// waitOK polls url until it answers 200, failing the test after
// startTimeout or as soon as one of procs has exited.
func waitOK(t *testing.T, url string, procs ...*process) {
	t.Helper()
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
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
			if !p.running() {
				t.Fatalf("%s exited while waiting for %s:\n%s", p.name, url, p.out.tail(8<<10))
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not answer 200 within %v; last answer: %s", url, startTimeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// servedBy waits until one of servers has logged the request with the given
// id and returns that server and the record.
func servedBy(t *testing.T, servers []*server, id string) (*server, map[string]any) {
	t.Helper()
	if id == "" {
		t.Fatal("the answer carries no X-Request-Id")
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		for _, s := range servers {
			if rec, ok := s.accessRecord(id); ok {
				return s, rec
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replica logged request %s", id)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// server is a replica of the token service or of the resource server.
type server struct {
	*process
	base    string // http://127.0.0.1:PORT
	metrics string // host:port of its /metrics listener
}

func (s *server) String() string { return fmt.Sprintf("%s (%s)", s.name, s.base) }
