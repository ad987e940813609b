// Package luascript composes a Redis Lua script from files (a library such
// as package ratelimit's window.lua, then the script's own file) and keeps
// Redis's error line numbers pointing into those files.
//
// Redis runs one script body; a script that uses a library is the library's
// text followed by its own, so Redis numbers the lines of the whole
// ("user_script:137"). A Script knows where each file starts in the body
// (the library at line 1, each next file at the line after the one before
// ends: its offset is the line count of the files before it) and rewrites
// every "user_script:N" of an error Redis returns as "FILE:LINE
// (user_script:N)", so an error names the file and line to read.
//
// A script's interface with Go, its KEYS, ARGV, reply and codes, is a
// Contract declared once in Go; package contractgen (go generate, with
// cmd/luacontract) writes from it the script's generated section and the
// Go structs that lay out its arguments and decode its reply (Reply).
// New resolves the section's names (KEYS[i], ARGV[i], a code's value) and
// inlines its reply builder where the script calls it, and Lint keeps the
// script's body from naming KEYS or ARGV by position.
package luascript
