package logtest

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"
)

// Sink is an io.Writer safe for concurrent use that keeps everything
// written to it. The zero value is ready to use.
type Sink struct {
	mu  sync.Mutex
	buf bytes.Buffer
	// written is closed by the next Write (nil: nobody waits).
	written chan struct{}
}

// Write appends p and wakes WaitFor.
func (s *Sink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.written != nil {
		close(s.written)
		s.written = nil
	}
	return s.buf.Write(p)
}

// WaitFor waits until what was written contains substr, or timeout passes,
// and reports whether it does. It wakes on each Write, without polling.
func (s *Sink) WaitFor(substr string, timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		s.mu.Lock()
		if strings.Contains(s.buf.String(), substr) {
			s.mu.Unlock()
			return true
		}
		if s.written == nil {
			s.written = make(chan struct{})
		}
		written := s.written
		s.mu.Unlock()
		select {
		case <-written:
		case <-timer.C:
			return strings.Contains(s.String(), substr)
		}
	}
}

// String returns everything written so far.
func (s *Sink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

// Reset forgets everything written so far.
func (s *Sink) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Reset()
}

// Records returns every line written so far as a JSON object (one slog
// JSON record per line); a line that is not one fails the test.
func (s *Sink) Records(t testing.TB) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(s.String(), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %q is not a JSON object: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}
