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
package luascript
