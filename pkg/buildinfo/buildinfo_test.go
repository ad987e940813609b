package buildinfo

import (
	"runtime"
	"runtime/debug"
	"testing"
)

func TestFrom(t *testing.T) {
	gv := runtime.Version()
	for _, tc := range []struct {
		bi   *debug.BuildInfo
		want string
	}{
		{nil, "unknown (revision unknown, " + gv + ")"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "3053e2b"}, {Key: "vcs.modified", Value: "false"}}},
			"v1.4.0 (revision 3053e2b, " + gv + ")"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			"(devel) (revision abc, modified, " + gv + ")"},
	} {
		if got := from(tc.bi).String(); got != tc.want {
			t.Errorf("%q, want %q", got, tc.want)
		}
	}
}
