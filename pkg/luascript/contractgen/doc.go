// Package contractgen turns the script contracts declared in a Go file
// (luascript.Contract literals) into the files they generate: the section
// of each script's .lua file that binds its KEYS and ARGV to names and
// defines its codes and reply builder, and the Go file of argument
// builders, reply decoders and typed codes. cmd/luacontract writes them
// (go generate); Stale regenerates them in memory for the tests that fail
// when a committed file no longer matches its contract
// (deploy/docs/decisions/0005-script-contracts.md records why).
package contractgen
