package luascript_test

import (
	"errors"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/partnerapi/authplatform/pkg/luascript"
	"github.com/partnerapi/authplatform/pkg/ratelimit"
	"github.com/partnerapi/authplatform/pkg/redistest"
)

func TestMain(m *testing.M) { os.Exit(redistest.RunMain(m)) }

// TestLineNumbers: an error of a composed script names the file and the
// line in it, in the library and in the script's own file, and the offset
// of the script's own file is the library's line count.
func TestLineNumbers(t *testing.T) {
	rdb := redistest.Client(t)
	body, err := os.ReadFile("testdata/boom.lua")
	if err != nil {
		t.Fatal(err)
	}
	s := luascript.New(ratelimit.WindowFile, luascript.File{Name: "body.lua", Text: string(body)})
	libLines := strings.Count(ratelimit.WindowLua, "\n")
	if got := s.Offset("body.lua"); got != libLines {
		t.Fatalf("Offset(body.lua) = %d, want window.lua's %d lines", got, libLines)
	}
	if s.Offset(ratelimit.WindowFile.Name) != 0 || s.Offset("nope") != -1 {
		t.Fatalf("offsets %d %d", s.Offset(ratelimit.WindowFile.Name), s.Offset("nope"))
	}
	err = s.Run(t.Context(), rdb, []string{"k"}, "own").Err()
	want := "body.lua:9 (user_script:" + itoa(libLines+9) + ")"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want it to name %s", err, want)
	}
	// The line of window.lua that reads the key.
	getLine := 0
	for i, l := range strings.Split(ratelimit.WindowLua, "\n") {
		if strings.Contains(l, "redis.call('GET', key)") {
			getLine = i + 1
		}
	}
	err = s.Run(t.Context(), rdb, []string{"k"}, "lib").Err()
	want = "pkg/ratelimit/window.lua:" + itoa(getLine) + " (user_script:" + itoa(getLine) + ")"
	if getLine == 0 || err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error %v, want it to name %s", err, want)
	}
	var le *luascript.Error
	if !asError(err, &le) || le.Err == nil {
		t.Fatalf("error %T, want *luascript.Error wrapping Redis's", err)
	}
	if name, line := s.Locate(libLines + 1); name != "body.lua" || line != 1 {
		t.Fatalf("Locate(%d) = %s:%d", libLines+1, name, line)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func asError(err error, target **luascript.Error) bool { return errors.As(err, target) }
