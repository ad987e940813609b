package logging

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
)

// go-redis's lines become records of the service's JSON stream: failures at
// warning level, the rest at info; a nil logger drops them.
func TestPrintf(t *testing.T) {
	var buf bytes.Buffer
	l, err := New(&buf, "info")
	if err != nil {
		t.Fatal(err)
	}
	p := Printf(l.With(slog.String("component", "redis")))
	p.Printf(context.Background(), "redis: connection pool: failed to dial after %d attempts: %s\n", 1, "refused")
	p.Printf(context.Background(), "sentinel: selected addr=%s", "10.0.0.1:6379")
	Printf(nil).Printf(context.Background(), "dropped %d", 1)
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d records:\n%s", len(lines), buf.String())
	}
	for i, want := range []map[string]string{
		{"level": "WARN", "msg": "redis: connection pool: failed to dial after 1 attempts: refused", "component": "redis"},
		{"level": "INFO", "msg": "sentinel: selected addr=10.0.0.1:6379", "component": "redis"},
	} {
		var rec map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &rec); err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if rec[k] != v {
				t.Errorf("record %d: %s = %v, want %q", i, k, rec[k], v)
			}
		}
	}
}
