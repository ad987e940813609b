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
	info, _ := os.ReadFile("/proc/cpuinfo")
	model, cores := cpuInfo(string(info))
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return []string{
		"Date: " + time.Now().UTC().Format("2006-01-02 15:04 MST"),
		fmt.Sprintf("Machine: %s, %d CPUs (nproc), %s, Linux %s; load average at the start: %s",
			model, runtime.NumCPU(), cores, strings.TrimSpace(string(kernel)), loadAverage()),
		"Go: " + firstLine("go", "version") + "; " + firstLine("redis-server", "--version") + "; " + firstLine("wrk", "--version"),
	}
}

// cpuInfo is the CPU model and the physical cores /proc/cpuinfo's text
// names: its distinct (physical id, core id) pairs, which a CPU's
// hyperthreads share ("cores unknown" where it lists none, as some
// virtual machines do).
func cpuInfo(text string) (model, cores string) {
	model = "CPU model unknown"
	seen := map[[2]string]bool{}
	var phys string
	for _, l := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			continue
		}
		switch k, v = strings.TrimSpace(k), strings.TrimSpace(v); k {
		case "model name":
			if model == "CPU model unknown" {
				model = v
			}
		case "physical id":
			phys = v
		case "core id":
			seen[[2]string{phys, v}] = true
		}
	}
	if len(seen) == 0 {
		return model, "cores unknown"
	}
	return model, plural(len(seen), "core", "cores")
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
