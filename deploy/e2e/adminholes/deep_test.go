//go:build unix

package adminholes

import (
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/redistest"
)

const tooDeep = "the body nests arrays and objects more than 32 deep"

// TestDeepBody (issue 59 point 7): 30,000 nested arrays in 60 KB, sent with
// an admin.write token, took the token service 3.8 s of CPU and 2.8 GB of
// peak RSS (the member check's paths grew with every level). Now a body
// nested past 32 levels is refused in one pass over its bytes: 400
// invalid_request in the admin problem shape, the token service's peak RSS
// grown by at most 16 MiB over every such body, each refusal at most 50 ms
// of its CPU (asserted with LONG_TESTS=1), and a 1 MiB body, however deep,
// 413 before it is decoded.
func TestDeepBody(t *testing.T) {
	s := startStack(t)
	id, secret := s.credentials(t, "operators", "create", "--name", "deep")
	auth := "Bearer " + s.token(t, id, secret, "")
	post := func(body string) answer {
		return s.call(t, "POST", s.admin+"/admin/v1/orgs", body, "Authorization", auth)
	}
	// Just past the limit first: the answer names it, whatever the cost.
	wantProblem(t, "33 nested arrays", post(strings.Repeat("[", 33)+strings.Repeat("]", 33)), 400, "invalid_request", tooDeep)
	if t.Failed() {
		t.FailNow() // no hostile body for a server that has no limit
	}
	at32 := `{"slug":"deep-ok","name":"Deep","environment":"live","x":` + strings.Repeat("[", 31) + strings.Repeat("]", 31) + "}"
	wantProblem(t, "32 levels", post(at32), 400, "invalid_request", `the body does not fit: json: unknown field "x"`)

	pid := s.auth.Cmd.Process.Pid
	hwm0, cpu0 := peakRSS(t, pid), cpuTime(t, pid)
	bodies := []struct{ what, body string }{
		{"30,000 nested arrays", strings.Repeat("[", 30000) + strings.Repeat("]", 30000)},
		{"30,000 unclosed arrays", strings.Repeat("[", 30000)},
		{"10,000 nested objects", strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)},
	}
	for _, b := range bodies {
		cpu := cpuTime(t, pid)
		wantProblem(t, b.what, post(b.body), 400, "invalid_request", tooDeep)
		redistest.AtMost(t, b.what+" (token service CPU)", cpuTime(t, pid)-cpu, 50*time.Millisecond)
	}
	a := post(strings.Repeat("[", 1<<20))
	wantProblem(t, "1 MiB of nested arrays", a, 413, "too_large", "the body exceeds 64 KiB")
	hwm := peakRSS(t, pid)
	if grown := hwm - hwm0; grown > 16<<20 {
		t.Errorf("the token service's peak RSS grew by %d MiB over %d hostile bodies, want at most 16 MiB", grown>>20, len(bodies)+1)
	}
	// Nothing was created, and the server serves on.
	if a := s.call(t, "GET", s.admin+"/admin/v1/orgs/deep-ok", nil, "Authorization", auth); a.status != 404 {
		t.Errorf("GET the org of the refused body: %d %s, want 404", a.status, a.body)
	}
	t.Logf("%d hostile bodies: token service CPU %v, peak RSS %d -> %d KiB", len(bodies)+1, cpuTime(t, pid)-cpu0, hwm0>>10, hwm>>10)
}

// peakRSS is the process's peak resident set (VmHWM), in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Skipf("no /proc status: %v", err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmHWM:" && f[2] == "kB" {
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n << 10
		}
	}
	t.Fatalf("no VmHWM in /proc/%d/status", pid)
	return 0
}

// cpuTime is the CPU time the process has used (utime + stime of
// /proc/PID/stat, in clock ticks of 10 ms: Linux's USER_HZ is 100).
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		t.Skipf("no /proc stat: %v", err)
	}
	// The fields after the command name, which is in parentheses.
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
