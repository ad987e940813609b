// Package ratelimittest reads, for tests, what package ratelimit's
// WindowLua stores in Redis. Production code never reads a window's count
// other than through WindowLua itself; tests of the packages that embed it
// check what it counted.
package ratelimittest
