package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"
)

// describeMachine is the machine and tool description of the report.
func describeMachine(ctx context.Context) []string {
	firstLine := func(name string, args ...string) string {
		// wrk --version exits 1 after printing its version: use the output.
		out, _ := exec.CommandContext(ctx, name, args...).CombinedOutput()
		if len(bytes.TrimSpace(out)) == 0 {
			return name + " unknown"
		}
		l, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
		return l
	}
	model := "unknown"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return []string{
		"Date: " + time.Now().UTC().Format("2006-01-02 15:04 MST"),
		fmt.Sprintf("Machine: %d CPUs (nproc), %s, Linux %s; load average at the start: %s",
			runtime.NumCPU(), model, strings.TrimSpace(string(kernel)), loadAverage()),
		"Go: " + firstLine("go", "version") + "; " + firstLine("redis-server", "--version") + "; " + firstLine("wrk", "--version"),
	}
}

func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
