package luascript

// Contract is a script's interface with its Go caller, declared once: the
// names of its KEYS and ARGV in order, the fields of its reply in order and
// its reply codes. It is written as a literal in a Go file of the package
// that runs the script (pkg/clients/contracts.go, pkg/ratelimit's
// contracts.go), which cmd/luacontract reads without compiling it (so only
// keyed literals of strings, integers and booleans) and turns into:
//
//   - a section of the script's .lua file, between the lines SectionBegin
//     and SectionEnd: a local for every key (k_NAME = KEYS[i]) and every
//     argument (a_NAME = ARGV[i]), a local constant for every code, and
//     the reply builder reply(...) (a reply of several fields). New
//     resolves them when it composes the script: each name becomes the
//     KEYS[i], ARGV[i] or value it is bound to and each call of reply the
//     table it returns, so Redis runs what a script written by hand with
//     positions would be (inline.go);
//   - a Go file beside the declaring one (contracts.go: contracts_gen.go):
//     a struct of the keys and one of the arguments with named fields and
//     a method list() that lays them out in the contract's order, the
//     reply struct with a decode method, and the codes as a typed constant
//     with a String method.
//
// So the order of KEYS and ARGV and the numbering of the codes exist in
// one place; the script's body and the Go code use names. Stale (in the
// packages' TestGenerated) regenerates both in memory and reports a
// committed file that differs, and Lint refuses a KEYS or ARGV outside the
// generated section.
type Contract struct {
	// Script is the .lua file whose section is generated, relative to the
	// declaring Go file's directory ("lua/authenticate.lua").
	Script string
	// Go is the prefix of the generated Go names ("auth": authKeys,
	// authArgs, authReply, authCode and the codes authOK, ...).
	Go string
	// Doc says, in a phrase, what the script does (the generated types'
	// comments).
	Doc string
	// Keys are the script's KEYS, in order (Type is always "string").
	Keys []Param
	// Args are its ARGV, in order.
	Args []Param
	// Reply is its reply's fields, in order: several fields make an
	// array, built by reply(...) in the script; a single field is the
	// script's plain return value. A field of Type "code" holds one of
	// Codes. A script whose reply the caller ignores may declare its
	// Codes alone (no decoder is generated).
	Reply []Param
	// Codes are the reply codes, each a name in the script (upper case)
	// and a typed constant in Go (Go + the name in camel case).
	Codes []Code
}

// Param is one key, argument or reply field of a Contract.
type Param struct {
	// Name is the snake_case name: k_NAME (a key) or a_NAME (an argument)
	// in the script, a reply builder's parameter; its camel case names the
	// Go field (initialisms such as id, ms, ttl, jti upper case).
	Name string
	// Type is the Go type: "string" (the default), "int" (int64), "bool"
	// (sent as 1 or 0: go-redis's encoding; a reply's bool is the integer
	// 1), or, for a reply field, "code" (the contract's code type).
	Type string
	// Doc says what it is (comments in both languages).
	Doc string
	// Optional marks a trailing key or argument that is sent only when not
	// the zero value ("" or 0); every one after an Optional is Optional,
	// and one left out leaves out those after it. In the script its local
	// is then nil.
	Optional bool
	// Rest marks the last argument as every value from its position on: a
	// []any in Go, a table of them in the script.
	Rest bool
}

// Code is one reply code of a Contract.
type Code struct {
	// Name is the script's constant (TOKEN_LIMITED); Go's is the
	// contract's prefix and the name in camel case (authTokenLimited).
	Name  string
	Value int64
	Doc   string
	// Go, when set, is the Go constant's name after the prefix instead
	// (window.lua's WL_ALLOWED: windowAllowed).
	Go string
}

// The lines that delimit a script's generated section.
const (
	SectionBegin = "-- luacontract begin: generated from the contract in Go; edit that, then go generate."
	SectionEnd   = "-- luacontract end"
)
