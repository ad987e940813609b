package ratelimit

import "github.com/partnerapi/authplatform/pkg/luascript"

// windowContract is window.lua's contract (package luascript's Contract):
// a library has no KEYS or ARGV of its own, only the codes window_limit
// answers as allowed, declared here once; go generate writes them into
// window.lua's generated section and contracts_gen.go (windowCode), and
// TestGenerated fails when either no longer matches. Only literals here:
// cmd/luacontract reads this file without compiling it.
//
//go:generate go run ../luascript/cmd/luacontract contracts.go limiter_test.go
var windowContract = luascript.Contract{
	Script: "window.lua", Go: "window", Doc: "the per-window limiter",
	Codes: []luascript.Code{
		{Name: "WL_REFUSED", Go: "Refused", Value: 0, Doc: "over the limit: not counted"},
		{Name: "WL_ALLOWED", Go: "Allowed", Value: 1, Doc: "under the limit: counted"},
	},
}
