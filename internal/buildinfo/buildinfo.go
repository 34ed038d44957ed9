// Package buildinfo holds the version stamped into the binary at release time.
package buildinfo

import "runtime/debug"

// Version, Commit and Date are set with -ldflags "-X" by the release build (.goreleaser.yaml).
var (
	Version = "dev"
	Commit  = ""
	Date    = ""
)

// String returns the version line printed by `volctl version`.
func String() string {
	v, c, d := Version, Commit, Date
	if c == "" {
		if bi, ok := debug.ReadBuildInfo(); ok {
			for _, s := range bi.Settings {
				switch s.Key {
				case "vcs.revision":
					c = s.Value
				case "vcs.time":
					if d == "" {
						d = s.Value
					}
				}
			}
		}
	}
	out := "volctl " + v
	if c != "" {
		if len(c) > 12 {
			c = c[:12]
		}
		out += " (" + c
		if d != "" {
			out += ", " + d
		}
		out += ")"
	}
	return out
}
