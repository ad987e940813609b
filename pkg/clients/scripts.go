package clients

import (
	"embed"

	"github.com/partnerapi/authplatform/pkg/luascript"
	"github.com/partnerapi/authplatform/pkg/ratelimit"
)

// Every script of the registry is a file of lua/; its KEYS, ARGV, reply and
// codes are its contract (contracts.go), from which its generated section
// and contracts_gen.go come. A script that uses a library is composed
// after it by package luascript, which inlines the reply builder and
// rewrites Redis's error line numbers to the files': the per-request
// scripts after pkg/ratelimit/window.lua (at line 1; the script's own file
// at the offset of window.lua's line count), the client changes after
// lua/change.lua (whose contract they share).
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
