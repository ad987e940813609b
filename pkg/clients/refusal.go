package clients

import (
	"fmt"
	"strings"
)

// Error is a request the registry refuses, with the words that tell its
// caller what to fix: Kind is the sentinel callers test with errors.Is
// (ErrInvalid, ErrNotFound, ErrExists, ErrConflict, ErrRevoked), Detail
// what was wrong. Detail is written for the caller (fosite's hint): it
// quotes what the caller gave and never the text of an error underneath,
// which, when there is one, is Cause, for the log only (fosite's debug).
// The admin API answers Public, the command line prints Error (its
// Detail alone for a usage error).
type Error struct {
	Kind   error
	Detail string
	Cause  error
}

// refuse is a refusal of kind, its Detail formatted from the caller's
// input (never from an error's text).
func refuse(kind error, format string, args ...any) *Error {
	return &Error{Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

// Invalid is an ErrInvalid refusal listing problems, one a line (nil when
// there is none): every problem of a request at once.
func Invalid(problems ...string) error {
	if len(problems) == 0 {
		return nil
	}
	return &Error{Kind: ErrInvalid, Detail: strings.Join(problems, "\n")}
}

// Invalidf is an ErrInvalid refusal of one problem.
func Invalidf(format string, args ...any) *Error { return refuse(ErrInvalid, format, args...) }

// NotFoundf is an ErrNotFound refusal naming what is not found ("client
// svc_...").
func NotFoundf(format string, args ...any) *Error { return refuse(ErrNotFound, format, args...) }

// text is the refusal in the words of its kind: "invalid input: ..." and
// "conflict: ..." lead with it, the others name their subject first
// (`client "svc_...": not found`).
func (e *Error) text() string {
	if e.Kind == ErrInvalid || e.Kind == ErrConflict {
		return e.Kind.Error() + ": " + e.Detail
	}
	return e.Detail + ": " + e.Kind.Error()
}

func (e *Error) Error() string {
	if e.Cause != nil {
		return e.text() + ": " + e.Cause.Error()
	}
	return e.text()
}

// Public is the refusal as the admin API answers it (its problem's
// detail): its kind's words and Detail, never Cause; a conflict in Detail's
// words alone (its code says conflict), a change to a revoked client with
// why it failed.
func (e *Error) Public() string {
	switch e.Kind {
	case ErrConflict:
		return e.Detail
	case ErrRevoked:
		return e.text() + ": a revoked client cannot be changed"
	}
	return e.text()
}

// Unwrap makes errors.Is(err, e.Kind) hold, and errors.Is and errors.As
// of the cause.
func (e *Error) Unwrap() []error {
	if e.Cause == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Cause}
}
