package redisconn

import (
	"context"
	"errors"
	"io"
	"net"

	"github.com/redis/go-redis/v9"
)

// Unreachable reports whether err is a known outage of Redis: the servers
// answer it 503 with Retry-After, as something that passes, while any
// other failure is an unknown error, 500 (a reply to a command that cannot
// work, such as WRONGTYPE, a script's own error, a record that does not
// decode, a bug). An outage is a connection that was refused, broke or
// timed out (the command budget's deadline included: see budget.go), a
// closed client or an exhausted pool, or a node that cannot serve for now
// (go-redis's own tests of its replies): LOADING its data, MASTERDOWN (a
// replica that lost its primary), READONLY (a primary turned replica by a
// failover), CLUSTERDOWN, TRYAGAIN, its maximum of clients reached, MOVED
// or ASK left over (SlotMoving).
//
// The client registry (package clients) marks its own failures
// (clients.IsUnavailable); this is for the errors of a client of Open as
// they come.
func Unreachable(err error) bool {
	if err == nil || errors.Is(err, redis.Nil) || errors.Is(err, context.Canceled) {
		return false
	}
	if redis.IsLoadingError(err) || redis.IsMasterDownError(err) || redis.IsReadOnlyError(err) ||
		redis.IsClusterDownError(err) || redis.IsTryAgainError(err) || redis.IsMaxClientsError(err) || SlotMoving(err) {
		return true
	}
	var reply redis.Error
	if errors.As(err, &reply) {
		return false // any other reply: the command ran and was refused
	}
	var ne net.Error // refused, reset, timed out (syscall.Errno is one too)
	return errors.As(err, &ne) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, redis.ErrClosed) || errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, redis.ErrPoolExhausted)
}
