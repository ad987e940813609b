package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/partnerapi/authplatform/pkg/redistest"
)

// tool is an external program the harness runs and the Debian package
// that ships it.
type tool struct{ command, pkg string }

var requiredTools = []tool{{"wrk", "wrk"}, {"redis-server", "redis-server"}}

// ensureTools finds wrk and redis-server, installing the missing ones with
// apt-get when install is set, or says how to.
func ensureTools(ctx context.Context, install bool, stderr io.Writer) error {
	var missing []string
	for _, t := range requiredTools {
		if _, err := exec.LookPath(t.command); err != nil {
			missing = append(missing, t.pkg)
		}
	}
	if len(missing) == 0 {
		return nil
	}
	if !install {
		return fmt.Errorf("%s not installed: run 'apt-get install -y %s' (or pass --install)",
			strings.Join(missing, " and "), strings.Join(missing, " "))
	}
	fmt.Fprintf(stderr, "bench: installing %s with apt-get\n", strings.Join(missing, " "))
	apt := func(args ...string) error {
		cmd := exec.CommandContext(ctx, "apt-get", args...)
		cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
		cmd.Stdout, cmd.Stderr = stderr, stderr
		return cmd.Run()
	}
	if err := apt(append([]string{"install", "-y", "-qq"}, missing...)...); err != nil {
		if err := apt("update", "-qq"); err != nil {
			return fmt.Errorf("apt-get update: %w", err)
		}
		if err := apt(append([]string{"install", "-y", "-qq"}, missing...)...); err != nil {
			return fmt.Errorf("apt-get install %s: %w", strings.Join(missing, " "), err)
		}
	}
	return nil
}

// moduleRoot is the directory of the module's go.mod.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("run the harness inside the module (go run ./deploy/bench from the repository)")
	}
	return filepath.Dir(gomod), nil
}

// binaries are the programs under test.
type binaries struct{ auth, resource, ceiling string }

// build compiles the servers (unless prebuilt ones were given) and the
// ceiling into dir, as deploy/Dockerfile builds the servers: each with its
// release profile (releaseProfile), so one go build per server.
func build(ctx context.Context, cfg config, dir string) (binaries, error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return binaries{}, err
	}
	bin := binaries{auth: cfg.AuthserverBin, resource: cfg.ResourceserverBin, ceiling: filepath.Join(dir, "ceiling")}
	builds := [][]string{{"-pgo=off", "./deploy/bench/ceiling"}}
	if bin.auth == "" {
		bin.auth = filepath.Join(dir, "authserver")
		builds = append(builds, []string{"-pgo=" + releaseProfile("authserver"), "./authserver"})
	}
	if bin.resource == "" {
		bin.resource = filepath.Join(dir, "resourceserver")
		builds = append(builds, []string{"-pgo=" + releaseProfile("resourceserver"), "./resourceserver"})
	}
	for _, args := range builds {
		cmd := exec.CommandContext(ctx, "go", append([]string{"build", "-tags", "grpcnotrace", "-o", dir + string(filepath.Separator)}, args...)...)
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			return binaries{}, fmt.Errorf("go build %s: %w\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, p := range []string{bin.auth, bin.resource} {
		if _, err := os.Stat(p); err != nil {
			return binaries{}, fmt.Errorf("server binary: %w", err)
		}
	}
	return bin, nil
}

// freePort returns a TCP port free on 127.0.0.1 at the time of the call,
// out of the kernel's ephemeral range (redistest.LoopbackPort says why).
func freePort() (int, error) { return redistest.LoopbackPort() }

// process is a child process whose output goes to a log file.
type process struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// startProcess starts name with args and env (added to a minimal
// environment, not the harness's) and its output in dir/name.log.
func startProcess(name, dir, path string, args, env []string) (*process, error) {
	logPath := filepath.Join(dir, name+".log")
	f, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, env...)
	cmd.Stdout, cmd.Stderr = f, f
	// The children die with the harness, even if it is killed.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &process{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	return p, nil
}

// pid is the process id.
func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the process ended.
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop asks the process to end (SIGTERM), then kills it after 10 seconds.
func (p *process) stop() {
	if p == nil || p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(10 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail is the end of the process's log, for error messages.
func (p *process) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// waitHTTP polls url until it answers 200, the process exits or 20 seconds
// pass.
func waitHTTP(ctx context.Context, p *process, url string) error {
	deadline := time.Now().Add(20 * time.Second)
	client := &http.Client{Timeout: time.Second}
	last := ""
	for time.Now().Before(deadline) {
		if p.exited() {
			return fmt.Errorf("%s exited (%v):\n%s", p.name, p.err, p.tail())
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%d %s", resp.StatusCode, body)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not answer 200 on %s within 20 s (last: %s):\n%s", p.name, url, last, p.tail())
}

// startRedis starts redis-server on a free loopback port, without
// persistence, in dir.
func startRedis(ctx context.Context, dir string) (*process, string, error) {
	port, err := freePort()
	if err != nil {
		return nil, "", err
	}
	p, err := startProcess("redis", dir, "redis-server", []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--daemonize", "no",
	}, nil)
	if err != nil {
		return nil, "", err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if p.exited() {
			return nil, "", fmt.Errorf("redis-server exited:\n%s", p.tail())
		}
		if c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond); err == nil {
			c.Close()
			return p, "redis://" + addr + "/0", nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.stop()
	return nil, "", fmt.Errorf("redis-server on %s did not accept connections:\n%s", addr, p.tail())
}

// syscalls counts a process's read and write system calls, all its
// threads together (/proc/PID/io syscr and syscw: read, readv, pread and
// write, writev, pwrite, on sockets as on files). Go's network poller
// and redis-server read and write sockets with these, so per request they
// say how many requests shared one read or one write: the batching of a
// pipeline, which CPU time alone does not show.
type syscalls struct{ Reads, Writes int64 }

func (a syscalls) minus(b syscalls) syscalls {
	return syscalls{a.Reads - b.Reads, a.Writes - b.Writes}
}

func ioCalls(pid int) (syscalls, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return syscalls{}, err
	}
	defer f.Close()
	return parseIO(f)
}

func parseIO(r io.Reader) (syscalls, error) {
	var c syscalls
	seen := 0
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		name, val, ok := strings.Cut(sc.Text(), ":")
		var dst *int64
		switch name {
		case "syscr":
			dst = &c.Reads
		case "syscw":
			dst = &c.Writes
		}
		if !ok || dst == nil {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(val), 10, 64)
		if err != nil {
			return syscalls{}, fmt.Errorf("/proc io: %s %q", name, val)
		}
		*dst = n
		seen++
	}
	if err := sc.Err(); err != nil {
		return syscalls{}, err
	}
	if seen != 2 {
		return syscalls{}, errors.New("/proc io: no syscr or syscw")
	}
	return c, nil
}

// cpuTime is the user plus system CPU time a process has used, all its
// threads together (/proc/PID/stat fields 14 and 15, in clock ticks of
// 1/100 s: USER_HZ is 100 on every Linux ABI).
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStatCPU(b)
}

func parseStatCPU(stat []byte) (time.Duration, error) {
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("/proc stat: no command name")
	}
	fields := strings.Fields(string(stat[i+1:]))
	// fields[0] is field 3 (state): utime is field 14, stime field 15.
	if len(fields) < 13 {
		return 0, errors.New("/proc stat: too few fields")
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("/proc stat: utime or stime is not a number")
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, nil
}

// peakRSS is the process's peak resident set size (VmHWM), in bytes.
func peakRSS(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	return parseVmHWM(f)
}

func parseVmHWM(r io.Reader) (int64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("/proc status: VmHWM %q", rest)
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc status: VmHWM %q", rest)
		}
		return kb << 10, nil
	}
	return 0, errors.New("/proc status: no VmHWM")
}

// resetPeakRSS sets the process's VmHWM back to its current RSS (Linux 4.0
// and later, by writing 5 to /proc/PID/clear_refs; it needs the right to
// ptrace the process). It reports whether it could: if not, VmHWM is the
// peak since the process started.
func resetPeakRSS(pid int) bool {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0) == nil
}

// logSize is the current length of the process's log.
func (p *process) logSize() int64 {
	fi, err := os.Stat(p.log)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// errorStatuses counts, in the process's log from offset on, the access
// records of answers of status 400 and above, by status: wrk counts such
// answers but cannot say which they were. It also returns the first
// warning or error record, which usually says why.
func (p *process) errorStatuses(offset int64) (map[int]int, string) {
	f, err := os.Open(p.log)
	if err != nil {
		return nil, ""
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, ""
	}
	counts := map[int]int{}
	first := ""
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if first == "" && (strings.Contains(line, `"level":"WARN"`) || strings.Contains(line, `"level":"ERROR"`)) {
			first = line
		}
		if m := statusRE.FindStringSubmatch(line); m != nil {
			if n, _ := strconv.Atoi(m[1]); n >= 400 {
				counts[n]++
			}
		}
	}
	return counts, first
}

var statusRE = regexp.MustCompile(`"status":(\d{3})\b`)
