package clients

import (
	"strings"
	"testing"
)

// TestDecodeReply: the one decoder of the scripts' replies fills a named
// struct in order, takes a scalar as a reply of one and a shorter reply
// (admit.lua's {DEAD}), and refuses a longer reply or a value of another
// type rather than guess.
func TestDecodeReply(t *testing.T) {
	var a admitReply
	if err := decodeReply([]any{int64(1), int64(3), int64(59000), int64(120), "EHR", "hospital", "Acme", "acme", nil}, &a); err != nil ||
		a != (admitReply{Code: 1, Count: 3, WaitMS: 59000, Limit: 120, Name: "EHR", Audience: "hospital", OrgName: "Acme", OrgSlug: "acme"}) {
		t.Fatalf("admit reply %+v, %v", a, err)
	}
	var dead admitReply
	if err := decodeReply([]any{int64(0)}, &dead); err != nil || dead != (admitReply{}) {
		t.Fatalf("{DEAD} %+v, %v", dead, err)
	}
	var created struct{ Created bool }
	if err := decodeReply(int64(1), &created); err != nil || !created.Created {
		t.Fatalf("scalar %+v, %v", created, err)
	}
	var c changeReply
	for _, bad := range []any{[]any{int64(1), int64(2), int64(3)}, []any{"1", int64(2)}} {
		if err := decodeReply(bad, &c); err == nil {
			t.Errorf("decodeReply(%v) took it: %+v", bad, c)
		}
	}
	var r authReply
	err := decodeReply([]any{int64(5), int64(1), int64(4), int64(1), int64(0), int64(30), "x"}, &r)
	if err == nil || !strings.Contains(err.Error(), "authReply.Repeated") {
		t.Errorf("a string for a bool: %v", err)
	}
}
