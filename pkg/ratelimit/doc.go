// Package ratelimit counts requests in Redis with a sliding log: every
// admitted request is a member of a sorted set scored by its time, and a
// request is admitted only while fewer than the limit lie in the last window.
// Unlike GCRA or fixed windows, this guarantees that never more than the
// limit are admitted in any window-long interval, whichever replica counts.
//
// The log is kept by a Lua function (SlidingLogLua) that other packages
// embed in their own scripts, so a caller can check state and count in one
// Redis round trip; Limiter runs it on its own for plain keys.
package ratelimit
