package audit

import (
	"context"
	"testing"
	"time"
)

func TestActorContext(t *testing.T) {
	if got := ActorFrom(context.Background()); got != (Actor{}) {
		t.Fatalf("no actor: %+v", got)
	}
	a := Actor{Operator: "svc_x", RequestID: "r1", Address: "192.0.2.1"}
	if got := ActorFrom(WithActor(context.Background(), a)); got != a {
		t.Fatalf("ActorFrom = %+v", got)
	}
	if a.String() != "operator=svc_x request_id=r1 address=192.0.2.1" || CLI.String() != "cli" || (Actor{}).String() != "" {
		t.Fatalf("strings %q %q", a.String(), CLI.String())
	}
}

// TestLine: a record survives its list encoding, and lines written before
// actors had fields of their own (three fields, the actor at the end of
// the detail) read alike.
func TestLine(t *testing.T) {
	at := time.UnixMilli(1_700_000_000_123).UTC()
	op := Actor{Operator: "svc_x", RequestID: "r1", Address: "192.0.2.1"}
	r := Record{At: at, Event: "client.rotate", Detail: "generation=2 secret_id=2", Actor: op}
	if got := FromLine("3", r.Line()); got != (Record{ID: "3", At: at, Event: r.Event, Detail: r.Detail, Actor: op}) {
		t.Fatalf("FromLine(Line) = %+v", got)
	}
	for line, want := range map[string]Record{
		"1700000000123\tclient.rotate\tgeneration=2 secret_id=2 by operator=svc_x request_id=r1 address=192.0.2.1": {Event: "client.rotate", Detail: "generation=2 secret_id=2", Actor: op},
		"1700000000123\tclient.revoke\tgeneration=3 by cli":                                                        {Event: "client.revoke", Detail: "generation=3", Actor: CLI},
		"1700000000123\tclient.created\tgeneration=1":                                                              {Event: "client.created", Detail: "generation=1"},
		"1700000000123\tclient.created\tgeneration=1 by someone odd":                                               {Event: "client.created", Detail: "generation=1 by someone odd"},
	} {
		want.ID, want.At = "1", at
		got := FromLine("1", line)
		if got != want {
			t.Errorf("FromLine(%q) = %+v, want %+v", line, got, want)
		}
		if got.DetailWithActor() != line[len("1700000000123\t"+want.Event+"\t"):] {
			t.Errorf("DetailWithActor of %q = %q", line, got.DetailWithActor())
		}
	}
}

// TestFields: a record survives its stream encoding; an organisation's
// entry written before (the actor in "detail") reads alike.
func TestFields(t *testing.T) {
	at := time.Date(2026, 11, 26, 12, 0, 0, 123_000_000, time.UTC)
	r := Record{At: at, Actor: Actor{Operator: "svc_x", RequestID: "r", Address: "a"}, Method: "POST", Route: "POST /admin/v1/orgs", Path: "/admin/v1/orgs", Status: 201, Replayed: true}
	values := map[string]any{}
	f := r.Fields()
	for i := 0; i < len(f); i += 2 {
		values[f[i].(string)] = f[i+1]
	}
	r.ID = "1-0"
	if got := FromFields("1-0", values); got != r {
		t.Fatalf("FromFields(Fields) = %+v, want %+v", got, r)
	}
	old := map[string]any{"event": "org.created", "org": "acme", "at": "2026-11-26T12:00:00.123Z", "detail": "by cli"}
	if got := FromFields("2-0", old); got != (Record{ID: "2-0", At: at, Event: "org.created", Org: "acme", Actor: CLI}) {
		t.Fatalf("old entry: %+v", got)
	}
}
