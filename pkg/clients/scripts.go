package clients

import (
	"embed"
	"fmt"
	"reflect"

	"github.com/partnerapi/authplatform/pkg/luascript"
	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

// Every script of the registry is a file of lua/, each with its KEYS, ARGV
// and reply in a header comment. A script that uses a library is composed
// after it by package luascript, which rewrites Redis's error line numbers
// to the files': the per-request scripts after pkg/ratelimit/window.lua
// (at line 1; the script's own file at the offset of window.lua's line
// count), the client changes after lua/change.lua.
//
//go:embed lua/*.lua
var luaFiles embed.FS

func luaFile(name string) luascript.File {
	text, err := luaFiles.ReadFile("lua/" + name)
	if err != nil {
		panic("clients: no lua/" + name) // embedded at build: a missing file is a build mistake
	}
	return luascript.File{Name: "pkg/clients/lua/" + name, Text: string(text)}
}

var (
	// The per-request scripts (authenticate.go, admit.go).
	authenticateScript = luascript.New(ratelimit.WindowFile, luaFile("authenticate.lua"))
	admitAPIScript     = luascript.New(ratelimit.WindowFile, luaFile("admit.lua"))

	// Creation (orgs.go, client.go) and revocation (revocation.go).
	indexScript        = luascript.New(luaFile("index_add.lua"))
	createOrgScript    = luascript.New(luaFile("create_org.lua"))
	createClientScript = luascript.New(luaFile("create_client.lua"))
	revokeTokenScript  = luascript.New(luaFile("revoke_token.lua"))
	unlockScript       = luascript.New(luaFile("unlock.lua"))

	// The changes of an existing client, one script each (client.go,
	// revocation.go), after their common lua/change.lua.
	rotateSecretScript = changeScript("rotate_secret.lua")
	addSecretScript    = changeScript("add_secret.lua")
	retireSecretScript = changeScript("retire_secret.lua")
	rotateKeysScript   = changeScript("rotate_keys.lua")
	revokeClientScript = changeScript("revoke_client.lua")
	setLimitScript     = changeScript("set_limit.lua")
	setDPoPScript      = changeScript("set_dpop.lua")
)

func changeScript(name string) *luascript.Script {
	return luascript.New(luaFile("change.lua"), luaFile(name))
}

// changeReply is the reply of every change script (lua/change.lua).
type changeReply struct {
	Code       int64
	Generation int64
}

// Codes of changeReply, named alike in lua/change.lua.
const (
	changeNotFound     = 0
	changeDone         = 1
	changeRevoked      = -1
	changeWrongMethod  = -2
	changeConflict     = -3
	changeNoSuchSecret = -4
)

// decodeReply is the one decoder of the scripts' replies: it reads a
// script's reply, an array (or a single value, as an array of one), into
// the fields of the struct *dst in order. An int64 field takes an integer,
// a bool an integer (1 true), a string a string or nil (a missing hash
// field); fields past a shorter reply stay zero; a longer reply or another
// type is an error.
func decodeReply(reply any, dst any) error {
	vals, ok := reply.([]any)
	if !ok {
		vals = []any{reply}
	}
	v := reflect.ValueOf(dst).Elem()
	if len(vals) > v.NumField() {
		return fmt.Errorf("reply of %d values, want at most %d (%s)", len(vals), v.NumField(), v.Type())
	}
	for i, val := range vals {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int64:
			n, ok := val.(int64)
			if !ok {
				return fmt.Errorf("reply value %d (%s.%s): %T, want an integer", i+1, v.Type(), v.Type().Field(i).Name, val)
			}
			f.SetInt(n)
		case reflect.Bool:
			n, ok := val.(int64)
			if !ok {
				return fmt.Errorf("reply value %d (%s.%s): %T, want an integer", i+1, v.Type(), v.Type().Field(i).Name, val)
			}
			f.SetBool(n == 1)
		case reflect.String:
			s, ok := val.(string)
			if !ok && val != nil {
				return fmt.Errorf("reply value %d (%s.%s): %T, want a string", i+1, v.Type(), v.Type().Field(i).Name, val)
			}
			f.SetString(s)
		default:
			return fmt.Errorf("reply struct %s: field %d of kind %s", v.Type(), i, f.Kind())
		}
	}
	return nil
}
