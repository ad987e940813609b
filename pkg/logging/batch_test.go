package logging_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/partnerapi/authplatform/pkg/logging"
)

// lockedBuffer is a writer that records every write it gets.
type lockedBuffer struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	writes int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.buf.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// Every record arrives whole and in order, each writer's records in the
// order it wrote them, and Close leaves nothing behind.
func TestBatchWriterKeepsEveryRecordInOrder(t *testing.T) {
	var out lockedBuffer
	b := logging.NewBatchWriter(&out)
	const writers, each = 8, 2000
	var mu sync.Mutex // as slog's handler serialises its writes
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				mu.Lock()
				_, err := fmt.Fprintf(b, "w%d %d\n", w, i)
				mu.Unlock()
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != writers*each {
		t.Fatalf("%d lines, want %d", len(lines), writers*each)
	}
	next := make([]int, writers)
	for _, l := range lines {
		var w, i int
		if _, err := fmt.Sscanf(l, "w%d %d", &w, &i); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		if i != next[w] {
			t.Fatalf("writer %d: record %d after %d", w, i, next[w]-1)
		}
		next[w]++
	}
	t.Logf("%d records in %d writes", len(lines), out.writes)
	// After Close, records are written directly.
	fmt.Fprintf(b, "late\n")
	if !strings.HasSuffix(out.String(), "late\n") {
		t.Error("a record written after Close was not written")
	}
	if err := b.Close(); err != nil {
		t.Error(err)
	}
}

// An idle writer writes a record on its own, without waiting for more.
func TestBatchWriterWritesAtOnceWhenIdle(t *testing.T) {
	r, w := io.Pipe()
	b := logging.NewBatchWriter(w)
	defer b.Close()
	defer r.Close()
	got := make(chan string, 1)
	go func() {
		p := make([]byte, 64)
		n, _ := r.Read(p)
		got <- string(p[:n])
	}()
	fmt.Fprintf(b, "one\n")
	select {
	case s := <-got:
		if s != "one\n" {
			t.Errorf("read %q", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an idle writer held its record")
	}
}

// While the output blocks, records are held up to a bound, then Write
// blocks too; when the output drains, everything arrives. The test runs in
// a synctest bubble, so it waits for the event itself (every goroutine
// blocked: the background one on the pipe, the logging one at the bound)
// rather than for a time.
func TestBatchWriterBlocksWhenTheOutputDoes(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, w := io.Pipe()
		b := logging.NewBatchWriter(w)
		line := strings.Repeat("x", 1023) + "\n"
		var taken atomic.Int64
		finished := make(chan struct{})
		go func() {
			defer close(finished)
			for range 3000 { // 3 MiB, three times the bound
				if _, err := io.WriteString(b, line); err != nil {
					return
				}
				taken.Add(1)
			}
		}()
		// Nobody reads: the writer stops well before its 3,000 records.
		synctest.Wait()
		select {
		case <-finished:
			t.Fatal("3 MiB handed over to an output that blocks")
		default:
		}
		// Held: the batch the pipe holds (at least one record, at most the
		// bound) and the 1 MiB bound gathered behind it.
		if n := taken.Load(); n < 1025 || n > 2048 {
			t.Errorf("%d records of 1 KiB taken while the output blocked; want 1,025 to 2,048 (a batch under way and 1 MiB behind it)", n)
		}
		var total int64
		done := make(chan struct{})
		go func() {
			defer close(done)
			total, _ = io.Copy(io.Discard, r)
		}()
		<-finished
		if err := b.Close(); err != nil {
			t.Fatal(err)
		}
		w.Close()
		<-done
		if total != int64(3000*len(line)) {
			t.Errorf("%d bytes arrived, want %d", total, 3000*len(line))
		}
	})
}

// BenchmarkAccessRecord logs an access record like httpserver.Base's to a
// file, from parallel goroutines, written directly or through a
// BatchWriter: the difference is the write(2) per record that batching
// shares.
func BenchmarkAccessRecord(b *testing.B) {
	for _, batched := range []bool{false, true} {
		name := map[bool]string{false: "direct", true: "batched"}[batched]
		b.Run(name, func(b *testing.B) {
			f, err := os.Create(filepath.Join(b.TempDir(), "access.log"))
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			var w io.Writer = f
			if batched {
				bw := logging.NewBatchWriter(f)
				defer bw.Close()
				w = bw
			}
			log, err := logging.New(w, "info")
			if err != nil {
				b.Fatal(err)
			}
			ctx := logging.WithRequestID(context.Background(), logging.NewRequestID())
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					log.LogAttrs(ctx, slog.LevelInfo, "request",
						slog.String("method", "GET"), slog.String("path", "/api/v1/me/"),
						slog.Int("status", 200), slog.Duration("duration", 123*time.Microsecond),
						slog.String("client_ip", "203.0.113.7"), slog.String("client_id", "svc_3f9a1c2b7d4e5f60"))
				}
			})
		})
	}
}
