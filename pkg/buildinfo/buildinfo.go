// Package buildinfo tells which build a binary is: its module version and
// the VCS revision it was built from, as the Go toolchain stamps them
// (runtime/debug.ReadBuildInfo). Both binaries print it for --version and
// export it as the partnerapi_build_info metric.
package buildinfo

import (
	"runtime"
	"runtime/debug"
)

// Unknown stands for what a binary does not carry (under go test, or built
// outside a VCS checkout).
const Unknown = "unknown"

// Info is a binary's build.
type Info struct {
	Version   string // module version ("(devel)" for a build of a checkout)
	Revision  string // VCS commit
	Modified  bool   // built with uncommitted changes
	GoVersion string
}

// Read returns this binary's build information.
func Read() Info {
	bi, _ := debug.ReadBuildInfo()
	return from(bi)
}

func from(bi *debug.BuildInfo) Info {
	info := Info{Version: Unknown, Revision: Unknown, GoVersion: runtime.Version()}
	if bi == nil {
		return info
	}
	if bi.Main.Version != "" {
		info.Version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			info.Revision = s.Value
		case "vcs.modified":
			info.Modified = s.Value == "true"
		}
	}
	return info
}

// String is the --version line after the program's name: "v1.2.0
// (revision 0123abc, go1.26.8)", with ", modified" after the revision of a
// build with uncommitted changes.
func (i Info) String() string {
	rev := i.Revision
	if i.Modified {
		rev += ", modified"
	}
	return i.Version + " (revision " + rev + ", " + i.GoVersion + ")"
}
