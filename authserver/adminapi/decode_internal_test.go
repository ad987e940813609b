package adminapi

import (
	"errors"
	"runtime"
	"strings"
	"testing"
)

// TestDecodeHostileBodies: decode's cost is linear in the body's size, at
// any nesting (issue 59 point 7: 30,000 nested arrays in 60 KB took 3.8 s
// of CPU and 2.8 GB, the member check's paths growing with each level). A
// 1 MiB body nested a million deep is refused by the depth limit before any
// decoder walks it, with at most 16 MiB allocated. A body at the limit's
// depth is walked token by token (encoding/json's Decoder allocates for
// each): the largest one the API reads, 64 KiB (readBody), stays within the
// same bound; a larger one is 413 before it is decoded. Allocation is the
// bound asserted here because it is what grew with the nesting and it does
// not move with the machine's load; the time each takes is measured by
// BenchmarkDecodeHostileBodies.
func TestDecodeHostileBodies(t *testing.T) {
	for _, tc := range hostileBodies() {
		var req createOrgRequest
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		err := decode([]byte(tc.body), &req)
		runtime.ReadMemStats(&after)
		var p *problem
		if !errors.As(err, &p) || p.Status != 400 || p.Code != "invalid_request" || p.Detail != tc.detail {
			t.Errorf("%s: %v, want 400 invalid_request %q", tc.name, err, tc.detail)
		}
		if n := after.TotalAlloc - before.TotalAlloc; n > 16<<20 {
			t.Errorf("%s: %d bytes allocated, want at most 16 MiB", tc.name, n)
		}
	}
}

type hostileBody struct{ name, body, detail string }

func hostileBodies() []hostileBody {
	const size = 1 << 20
	atLimit := strings.Repeat(`{"a":`, MaxDepth-3) + "[" + strings.Repeat(`[[],"x",1,{}],`, (64<<10-300)/14) + "0]" + strings.Repeat("}", MaxDepth-3)
	return []hostileBody{
		{"a million nested arrays", strings.Repeat("[", size), "the body nests arrays and objects more than 32 deep"},
		{"a million nested objects", strings.Repeat(`{"a":`, size/5), "the body nests arrays and objects more than 32 deep"},
		{"one level past the limit", strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), "the body nests arrays and objects more than 32 deep"},
		{"64 KiB at the limit's depth", atLimit, `the body does not fit: json: unknown field "a"`},
	}
}

// BenchmarkDecodeHostileBodies: the time decode takes to refuse each of
// TestDecodeHostileBodies' bodies (go test -bench DecodeHostile
// ./authserver/adminapi).
func BenchmarkDecodeHostileBodies(b *testing.B) {
	for _, tc := range hostileBodies() {
		body := []byte(tc.body)
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var req createOrgRequest
				if decode(body, &req) == nil {
					b.Fatal("decoded a hostile body")
				}
			}
		})
	}
}
