package clients

import (
	"context"
	"crypto/rand"
	"encoding/base64"
)

type actorKey struct{}

// WithActor names who makes the registry changes made with ctx: "cli", or
// an admin API caller ("operator=svc_... request_id=... address=..."). Each
// change's audit entry records it; it must never hold a secret.
func WithActor(ctx context.Context, actor string) context.Context {
	return context.WithValue(ctx, actorKey{}, actor)
}

// actorDetail appends ctx's actor to an audit entry's detail.
func actorDetail(ctx context.Context, detail string) string {
	actor, _ := ctx.Value(actorKey{}).(string)
	switch {
	case actor == "":
		return detail
	case detail == "":
		return "by " + actor
	default:
		return detail + " by " + actor
	}
}

// newNonce returns 128 random bits, base64url: what a write script keeps to
// know itself when a retry runs it again.
func newNonce() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	return base64.RawURLEncoding.EncodeToString(b[:])
}
