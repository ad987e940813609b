package logtest_test

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/logtest"
)

// Concurrent records all arrive whole and read back as JSON objects.
func TestSink(t *testing.T) {
	var s logtest.Sink
	l := slog.New(slog.NewJSONHandler(&s, nil))
	var wg sync.WaitGroup
	for i := range 50 {
		wg.Go(func() { l.Info("request", "n", i) })
	}
	wg.Wait()
	recs := s.Records(t)
	if len(recs) != 50 {
		t.Fatalf("%d records, want 50", len(recs))
	}
	seen := map[float64]bool{}
	for _, r := range recs {
		if r["msg"] != "request" {
			t.Errorf("record %v", r)
		}
		seen[r["n"].(float64)] = true
	}
	if len(seen) != 50 {
		t.Errorf("%d distinct records, want 50", len(seen))
	}
	if !strings.Contains(s.String(), `"n":49`) {
		t.Error("String lacks a record")
	}
	s.Reset()
	if s.String() != "" || len(s.Records(t)) != 0 {
		t.Error("Reset kept something")
	}
	fmt.Fprint(&s, "\n")
	if len(s.Records(t)) != 0 {
		t.Error("a blank line is a record")
	}
}

// WaitFor wakes on the Write that brings the text, and gives up at its
// timeout when none does.
func TestSinkWaitFor(t *testing.T) {
	var s logtest.Sink
	go func() {
		for i := range 3 {
			fmt.Fprintf(&s, "line %d\n", i)
		}
	}()
	if !s.WaitFor("line 2", time.Minute) {
		t.Fatalf("WaitFor missed a written line: %q", s.String())
	}
	if s.WaitFor("never written", 10*time.Millisecond) {
		t.Error("WaitFor found text nobody wrote")
	}
}
