package clients_test

import (
	"testing"
	"time"

	"github.com/partnerapi/authplatform/pkg/clients"
)

// testUsageHistory: three token requests, then a sample a second after
// the next minute starts records them for that minute's client only, once
// whoever else samples the same minute; the next minute, with no request,
// records nothing for it; the history reads the hour ending now, oldest
// first, and an hour later no longer holds the minute. An id that is not
// a client's, and a field of another layout, read as zeros.
func testUsageHistory(t *testing.T, e *env) {
	c, secret := e.hospital(t)
	idle, _ := e.client(t, clients.ClientSpec{OrgSlug: "st-elsewhere", Name: "Idle", Audience: clients.AudienceHospital, Scopes: clients.AllScopes})
	for range 3 {
		e.token(t, c.ID, secret)
	}
	sample := e.clock.Now().Truncate(time.Minute).Add(time.Minute + time.Second)
	end := sample.Truncate(time.Minute)
	for i, want := range []bool{true, false} {
		took, err := e.store.RecordUsage(ctx(t), sample)
		if err != nil || took != want {
			t.Fatalf("RecordUsage #%d: took %v, err %v; want %v", i+1, took, err, want)
		}
	}
	if got := e.keysWith(t, ":usage"); len(got) != 1 || got[0] != e.prefix+"{"+c.ID+"}:usage" {
		t.Errorf("usage keys %q, want only %s's", got, c.ID)
	}
	ttl, err := e.rdb.TTL(ctx(t), e.prefix+"{"+c.ID+"}:usage").Result()
	if err != nil || ttl <= time.Hour || ttl > 2*time.Hour {
		t.Errorf("usage TTL %v (%v), want (1h, 2h]", ttl, err)
	}
	if err := e.rdb.HSet(ctx(t), e.prefix+"{"+c.ID+"}:usage", "7", "not a minute").Err(); err != nil {
		t.Fatal(err)
	}
	hs := e.history(t, []string{c.ID, idle.ID, "not-a-client"}, sample)
	if len(hs) != 3 {
		t.Fatalf("%d histories, want 3", len(hs))
	}
	for i, h := range hs {
		if len(h.Minutes) != clients.UsageMinutes {
			t.Fatalf("history %d: %d minutes, want %d", i, len(h.Minutes), clients.UsageMinutes)
		}
		if first, last := h.Minutes[0].End, h.Minutes[clients.UsageMinutes-1].End; !last.Equal(end) || !first.Equal(end.Add(-59*time.Minute)) {
			t.Errorf("history %d spans %v to %v, want the hour ending %v", i, first, last, end)
		}
		var api, token int64
		for _, m := range h.Minutes {
			api, token = api+m.API, token+m.Token
		}
		want := int64(0)
		if i == 0 {
			want = 3
		}
		if api != 0 || token != want {
			t.Errorf("history %d: %d API and %d token requests, want 0 and %d", i, api, token, want)
		}
	}
	if m := hs[0].Minutes[clients.UsageMinutes-1]; m.Token != 3 {
		t.Errorf("last minute %+v, want 3 token requests", m)
	}

	next := sample.Add(time.Minute)
	if took, err := e.store.RecordUsage(ctx(t), next); err != nil || !took {
		t.Fatalf("RecordUsage a minute later: %v %v", took, err)
	}
	h := e.history(t, []string{c.ID}, next)[0]
	if a, b := h.Minutes[clients.UsageMinutes-2], h.Minutes[clients.UsageMinutes-1]; a.Token != 3 || b.Token != 0 || b.API != 0 {
		t.Errorf("the last two minutes %+v %+v, want 3 token requests then none", a, b)
	}
	if h := e.history(t, []string{c.ID}, sample.Add(time.Hour))[0]; !h.Minutes[0].End.After(end) || total(h) != 0 {
		t.Errorf("an hour later: from %v, %d requests; want the minute gone", h.Minutes[0].End, total(h))
	}
}

func (e *env) history(t *testing.T, ids []string, now time.Time) []clients.UsageHistory {
	t.Helper()
	hs, err := e.store.UsageHistory(ctx(t), ids, now)
	if err != nil {
		t.Fatal(err)
	}
	return hs
}

func total(h clients.UsageHistory) int64 {
	var n int64
	for _, m := range h.Minutes {
		n += m.API + m.Token
	}
	return n
}
