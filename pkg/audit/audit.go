package audit

import (
	"context"
	"strconv"
	"strings"
	"time"
)

// Actor is who made a change or a call: an operator client of the admin
// API (Operator, with the call's RequestID and the caller's Address), or a
// system user (System: "cli" for the operator CLI). The zero Actor is
// nobody known.
type Actor struct {
	Operator  string
	RequestID string
	Address   string
	System    string
}

// CLI is the operator CLI's actor.
var CLI = Actor{System: "cli"}

type actorKey struct{}

// WithActor names who makes the changes made with ctx.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns ctx's actor (zero if none).
func ActorFrom(ctx context.Context) Actor {
	a, _ := ctx.Value(actorKey{}).(Actor)
	return a
}

// String is the actor as the trails' "detail" has always shown it:
// "operator=ID request_id=R address=A", "cli", or "".
func (a Actor) String() string {
	if a.Operator != "" {
		return "operator=" + a.Operator + " request_id=" + a.RequestID + " address=" + a.Address
	}
	return a.System
}

// parseActor reads the actor of a record written before actors had fields
// of their own: the end of its detail, after " by " (or the whole detail
// after "by "), as String wrote it.
func parseActor(detail string) (string, Actor) {
	rest, by := "", ""
	switch {
	case strings.HasPrefix(detail, "by "):
		by = detail[3:]
	default:
		i := strings.LastIndex(detail, " by ")
		if i < 0 {
			return detail, Actor{}
		}
		rest, by = detail[:i], detail[i+4:]
	}
	if by == CLI.System {
		return rest, CLI
	}
	var a Actor
	for f := range strings.FieldsSeq(by) {
		k, v, _ := strings.Cut(f, "=")
		switch k {
		case "operator":
			a.Operator = v
		case "request_id":
			a.RequestID = v
		case "address":
			a.Address = v
		default:
			return detail, Actor{}
		}
	}
	if a.Operator == "" {
		return detail, Actor{}
	}
	return rest, a
}

// Record is one audit entry: a change to the registry (Event, ClientID or
// Org, Detail) or a call of the admin API (Method, Route, Path, Status,
// Replayed), with who made it.
type Record struct {
	// ID orders the records of one trail: a stream entry id, or a list
	// entry's place (1 = oldest kept).
	ID       string
	At       time.Time
	Event    string
	ClientID string
	Org      string
	// Detail is what changed ("generation=2 secret_id=2"), without the
	// actor.
	Detail string
	Actor  Actor
	// An admin API call.
	Method, Route, Path string
	Status              int
	Replayed            bool
}

// DetailWithActor is the detail and the actor as the trails' "detail" has
// always shown them: "generation=2 by operator=...".
func (r Record) DetailWithActor() string {
	a := r.Actor.String()
	switch {
	case a == "":
		return r.Detail
	case r.Detail == "":
		return "by " + a
	}
	return r.Detail + " by " + a
}

// LineActor is the end of a list line (Line) that holds a's fields: what
// a script that writes the line itself appends after the detail.
func LineActor(a Actor) string {
	return "\t" + a.Operator + "\t" + a.RequestID + "\t" + a.Address + "\t" + a.System
}

// Line encodes a change for a client's audit list: time (ms), event,
// detail, then the actor's operator, request id, address and system user,
// tab-separated (about 200 bytes a change, where a stream's first node
// alone takes 4 KB). Tabs in the detail are never written (details are
// made by the registry, not given by callers).
func (r Record) Line() string {
	return strconv.FormatInt(r.At.UnixMilli(), 10) + "\t" + r.Event + "\t" + r.Detail + LineActor(r.Actor)
}

// FromLine decodes a list line (Line): lines of three fields, written
// before actors had fields of their own, keep the actor at the end of the
// detail, and are read alike.
func FromLine(id, line string) Record {
	f := strings.SplitN(line, "\t", 7)
	for len(f) < 3 {
		f = append(f, "")
	}
	r := Record{ID: id, At: parseTime(f[0]), Event: f[1], Detail: f[2]}
	if len(f) == 7 {
		r.Actor = Actor{Operator: f[3], RequestID: f[4], Address: f[5], System: f[6]}
	} else {
		r.Detail, r.Actor = parseActor(r.Detail)
	}
	return r
}

// Fields encodes a record for a stream entry (XADD field-value pairs):
// only the fields it has.
func (r Record) Fields() []any {
	v := []any{"at", r.At.UTC().Format(time.RFC3339Nano)}
	add := func(k, s string) {
		if s != "" {
			v = append(v, k, s)
		}
	}
	add("event", r.Event)
	add("org", r.Org)
	add("client_id", r.ClientID)
	add("detail", r.Detail)
	add("operator", r.Actor.Operator)
	add("request_id", r.Actor.RequestID)
	add("address", r.Actor.Address)
	add("system", r.Actor.System)
	add("method", r.Method)
	add("route", r.Route)
	add("path", r.Path)
	if r.Status != 0 {
		v = append(v, "status", strconv.Itoa(r.Status))
	}
	if r.Replayed {
		v = append(v, "replayed", "1")
	}
	return v
}

// FromFields decodes a stream entry (Fields). Registry entries written
// before actors had fields of their own keep the actor at the end of the
// detail, and are read alike.
func FromFields(id string, values map[string]any) Record {
	str := func(k string) string { s, _ := values[k].(string); return s }
	r := Record{ID: id, At: parseTime(str("at")), Event: str("event"), Org: str("org"), ClientID: str("client_id"),
		Detail: str("detail"), Actor: Actor{Operator: str("operator"), RequestID: str("request_id"), Address: str("address"), System: str("system")},
		Method: str("method"), Route: str("route"), Path: str("path"), Replayed: str("replayed") == "1"}
	r.Status, _ = strconv.Atoi(str("status"))
	if r.Actor == (Actor{}) && r.Method == "" {
		r.Detail, r.Actor = parseActor(r.Detail)
	}
	return r
}

// parseTime reads a stored time: milliseconds since the epoch, or RFC 3339.
func parseTime(s string) time.Time {
	if ms, err := strconv.ParseInt(s, 10, 64); err == nil {
		return time.UnixMilli(ms).UTC()
	}
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t.UTC()
}
