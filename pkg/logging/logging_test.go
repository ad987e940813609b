package logging_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/partnerapi/authplatform/pkg/logging"
)

func TestRequestIDOnEveryRecord(t *testing.T) {
	var buf bytes.Buffer
	log, err := logging.New(&buf, "debug")
	if err != nil {
		t.Fatal(err)
	}
	ctx := logging.WithRequestID(context.Background(), "abc-123")
	log.With("component", "x").InfoContext(ctx, "hello", "k", 1)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("not JSON: %v: %s", err, buf.Bytes())
	}
	if rec["request_id"] != "abc-123" || rec["component"] != "x" || rec["msg"] != "hello" {
		t.Errorf("record = %v", rec)
	}
	buf.Reset()
	log.Info("no context")
	if bytes.Contains(buf.Bytes(), []byte("request_id")) {
		t.Errorf("record without a request context has a request_id: %s", buf.Bytes())
	}
}

func TestLevels(t *testing.T) {
	if _, err := logging.New(&bytes.Buffer{}, "loud"); err == nil {
		t.Error("unknown level accepted")
	}
	var buf bytes.Buffer
	log, _ := logging.New(&buf, "warn")
	log.Info("hidden")
	if buf.Len() != 0 {
		t.Errorf("info logged at warn level: %s", buf.Bytes())
	}
}

func TestAcceptRequestID(t *testing.T) {
	for id, want := range map[string]bool{
		"abc-123_x.y": true, "": false, "has space": false, "new\nline": false,
		string(make([]byte, 129)): false, logging.NewRequestID(): true,
	} {
		if got := logging.AcceptRequestID(id); got != want {
			t.Errorf("AcceptRequestID(%q) = %v, want %v", id, got, want)
		}
	}
}
