package operations

import (
	"context"
	"regexp"
	"strconv"
	"strings"

	"github.com/partnerapi/authplatform/pkg/audit"
	"github.com/partnerapi/authplatform/pkg/clients"
)

// AuditPage is one page of a client's audit trail, oldest first.
type AuditPage struct {
	Records []audit.Record
	// More: entries after the last of Records remain (AuditMark of it
	// starts the next page).
	More bool
}

// AuditMark names a client's audit entry for the next page to start
// after: its place in the trail (Record.ID) and its time in milliseconds,
// so that a trail trimmed in between (the oldest entries dropped past the
// cap, which moves every place down) still finds it.
func AuditMark(r audit.Record) string {
	return r.ID + "." + strconv.FormatInt(r.At.UnixMilli(), 10)
}

var auditMark = regexp.MustCompile(`^([1-9][0-9]{0,8})\.([0-9]{1,15})$`)

// ValidAuditMark reports whether s has the form of an AuditMark.
func ValidAuditMark(s string) bool { return auditMark.MatchString(s) }

// ClientAuditPage returns up to limit of a client's audit entries (0:
// every one) after the entry marked after ("" from the oldest kept),
// oldest first, made by the operator client operator only when it is not
// "". An unknown client is ErrNotFound. The trail is one list of at most
// a few thousand short lines, read whole as ClientAudit reads it, and
// paged here.
func (s *Service) ClientAuditPage(ctx context.Context, id, operator, after string, limit int) (AuditPage, error) {
	if limit < 0 || limit > MaxPageSize {
		return AuditPage{}, clients.Invalidf("limit %d: must be 1-%d", limit, MaxPageSize)
	}
	if after != "" && !ValidAuditMark(after) {
		return AuditPage{}, clients.Invalidf("audit mark %q", after)
	}
	all, err := s.ClientAudit(ctx, id)
	if err != nil {
		return AuditPage{}, err
	}
	var p AuditPage
	for _, r := range all[startAfter(all, after):] {
		if operator != "" && r.Actor.Operator != operator {
			continue
		}
		if limit > 0 && len(p.Records) == limit {
			p.More = true
			break
		}
		p.Records = append(p.Records, r)
	}
	return p, nil
}

// startAfter is the index in records (oldest first, places 1..n) of the
// first entry after the one mark names: at its place when the trail is as
// it was, else at or below it (the trail was trimmed since), found by its
// time; 0 when it was trimmed away (every entry kept is newer).
func startAfter(records []audit.Record, mark string) int {
	if mark == "" {
		return 0
	}
	place, ms, _ := strings.Cut(mark, ".")
	p, _ := strconv.Atoi(place)
	at, _ := strconv.ParseInt(ms, 10, 64)
	for i := min(p, len(records)) - 1; i >= 0; i-- {
		t := records[i].At.UnixMilli()
		if t == at {
			return i + 1
		}
		if t < at {
			break
		}
	}
	return 0
}
