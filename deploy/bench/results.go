package main

// The results file (--out FILE; the module's is deploy/bench/RESULTS.md):
// the harness's report and nothing else. It holds a header the harness
// regenerates on every write, then one section per Redis topology (one
// node, a Cluster), each the report of that topology's latest run as the
// harness printed it, between marker lines:
//
//	<!-- bench:begin one-node sha256=HEX -->
//	## One Redis node
//	...
//	<!-- bench:end one-node -->
//
// A run replaces its own topology's section and keeps the others', so a
// one-node run keeps the Cluster's report and a Cluster run the one
// node's. HEX is the SHA-256 of the text between the two lines: a section
// whose text no longer matches was edited by hand, and the harness
// refuses the file rather than keep or drop what someone wrote. Text
// outside the sections is the header: rewritten, never kept.

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// resultsMark is the results file's first line: the harness writes over
// no file that does not begin with it.
const resultsMark = "<!-- bench:report: written by `go run ./deploy/bench --out FILE`; do not edit: a run rewrites this file and refuses one edited by hand -->"

// The marker lines around a section.
const (
	beginMark = "<!-- bench:begin "
	endMark   = "<!-- bench:end "
	markClose = " -->"
	// markPrefix starts every marker line; no report line does.
	markPrefix = "<!-- bench:"
)

// resultsHeader says, under the mark, what the file is and how to
// regenerate it; the commands follow.
const resultsHeader = "# Load harness results\n\n" +
	"The load harness's report (`deploy/bench`), written by it alone. A run with `--out deploy/bench/RESULTS.md`\n" +
	"replaces its Redis topology's section below with its report (the machine, the exact command, every\n" +
	"scenario's figures and ratios, the targets met or missed and, under `--profiles DIR`, where the CPU\n" +
	"goes), keeps the other topology's section and rewrites this header. Each section carries its checksum:\n" +
	"the harness refuses a file edited by hand. To regenerate, on a quiet machine from the module's root\n" +
	"(`go run ./deploy/bench -h` lists the flags):\n\n"

// topology is a Redis topology the results file keeps a section for.
type topology struct {
	// Key names its section in the markers; Title is its heading.
	Key, Title string
	// Command is the command the header gives for it.
	Command string
}

// topologies are the file's sections, in its order.
var topologies = []topology{
	{Key: "one-node", Title: "One Redis node", Command: "go run ./deploy/bench --out deploy/bench/RESULTS.md"},
	{Key: "redis-cluster", Title: "Redis Cluster",
		Command: "go run ./deploy/bench --redis-cluster 3 --redis-cluster-replicas 1 --out deploy/bench/RESULTS.md"},
}

// topologyOf is the topology cfg runs: a Redis Cluster of any shape
// under --redis-cluster, else the one node.
func topologyOf(cfg config) topology {
	if cfg.RedisCluster > 0 {
		return topologies[1]
	}
	return topologies[0]
}

// resultsFile is a results file's sections: each topology's report, by
// Key, as the text between its markers (newline-terminated lines).
type resultsFile map[string]string

// parseResults reads a results file. An empty text is a file with no
// section yet. Anything else must begin with resultsMark and hold each
// known topology's section at most once, whole (begin and end marker),
// its text matching its checksum.
func parseResults(text string) (resultsFile, error) {
	f := resultsFile{}
	if text == "" {
		return f, nil
	}
	first, _, _ := strings.Cut(text, "\n")
	if first != resultsMark {
		return nil, errors.New("not a report the harness wrote (its first line is not the harness's mark)")
	}
	if !strings.HasSuffix(text, "\n") {
		return nil, errors.New("cut short: its last line is unterminated")
	}
	lines := strings.SplitAfter(text, "\n")
	lines = lines[:len(lines)-1] // the empty string after the last newline
	for i := 1; i < len(lines); i++ {
		line := strings.TrimSuffix(lines[i], "\n")
		if !strings.HasPrefix(line, markPrefix) {
			continue // the header, regenerated on every write
		}
		key, sum, err := parseBegin(line)
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", i+1, err)
		}
		if _, dup := f[key]; dup {
			return nil, fmt.Errorf("line %d: a second section %s", i+1, key)
		}
		end := endMark + key + markClose
		j := i + 1
		for ; j < len(lines) && strings.TrimSuffix(lines[j], "\n") != end; j++ {
			if strings.HasPrefix(lines[j], markPrefix) {
				return nil, fmt.Errorf("line %d: section %s (from line %d) not ended before another marker", j+1, key, i+1)
			}
		}
		if j == len(lines) {
			return nil, fmt.Errorf("line %d: section %s has no end marker", i+1, key)
		}
		body := strings.Join(lines[i+1:j], "")
		if checksum(body) != sum {
			return nil, fmt.Errorf("section %s (lines %d-%d) was edited by hand: its text no longer matches its checksum", key, i+1, j+1)
		}
		f[key] = body
		i = j
	}
	return f, nil
}

// parseBegin reads a section's begin marker: its topology's key and the
// checksum of its text.
func parseBegin(line string) (key, sum string, err error) {
	rest, ok := strings.CutPrefix(line, beginMark)
	if !ok || !strings.HasSuffix(rest, markClose) {
		return "", "", fmt.Errorf("%q is not a section's begin marker", line)
	}
	key, sum, ok = strings.Cut(strings.TrimSuffix(rest, markClose), " sha256=")
	if !ok || !slices.ContainsFunc(topologies, func(t topology) bool { return t.Key == key }) {
		return "", "", fmt.Errorf("%q names no known topology with its checksum", line)
	}
	return key, sum, nil
}

func checksum(body string) string {
	h := sha256.Sum256([]byte(body))
	return hex.EncodeToString(h[:])
}

// set makes body (a report as report.write writes it) the section of
// the topology key.
func (f resultsFile) set(key, body string) error {
	if !strings.HasSuffix(body, "\n") {
		body += "\n"
	}
	for _, l := range strings.Split(body, "\n") {
		if strings.HasPrefix(l, markPrefix) {
			return fmt.Errorf("the report of %s holds a marker line %q", key, l)
		}
	}
	f[key] = body
	return nil
}

// format writes the file: the header, then each topology's section that
// there is, in topologies' order.
func (f resultsFile) format() string {
	var b strings.Builder
	b.WriteString(resultsMark + "\n")
	b.WriteString(resultsHeader)
	for _, t := range topologies {
		fmt.Fprintf(&b, "    %s\n", t.Command)
	}
	b.WriteString("\n")
	for _, t := range topologies {
		state := "no run yet."
		if _, ok := f[t.Key]; ok {
			state = "the latest run is below."
		}
		fmt.Fprintf(&b, "- %s: %s\n", t.Title, state)
	}
	for _, t := range topologies {
		body, ok := f[t.Key]
		if !ok {
			continue
		}
		fmt.Fprintf(&b, "\n%s%s sha256=%s%s\n%s%s%s%s\n", beginMark, t.Key, checksum(body), markClose, body, endMark, t.Key, markClose)
	}
	return b.String()
}

// readResults reads the results file at path (none yet: no section).
func readResults(path string) (resultsFile, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return resultsFile{}, nil
	}
	if err != nil {
		return nil, err
	}
	f, err := parseResults(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s: %w; the harness writes over nothing else (git checkout or delete it)", path, err)
	}
	return f, nil
}

// writeResults makes body the section of the topology key in the results
// file at path, keeping its other sections, and replaces the file whole
// (a new file renamed over it: never half-written).
func writeResults(path, key, body string) error {
	f, err := readResults(path)
	if err != nil {
		return err
	}
	if err := f.set(key, body); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(f.format()); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
