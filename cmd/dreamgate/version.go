package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Stamped by `make build`, `make release` and the Dockerfile with -ldflags
// -X; a plain `go build` or `go install` leaves them empty and the build
// info answers.
var (
	version   string
	commit    string
	buildDate string
)

// versionInfo is what `dreamgate version` prints.
type versionInfo struct {
	Version, Commit, Date, DateKind, Go, Platform string
	Modified                                      bool
}

// stamp is what the build said about itself with -ldflags -X.
type stamp struct{ version, commit, date string }

// readVersion answers from what make (or the Dockerfile) stamped in, and
// from the build info the toolchain embeds where nothing was stamped.
func readVersion() versionInfo {
	bi, _ := debug.ReadBuildInfo()
	return resolveVersion(bi, stamp{version, commit, buildDate})
}

// resolveVersion prefers the stamp to the toolchain's VCS data, field by
// field. The stamp is what the person building chose to say (make takes it
// from git, a Docker build from its build arguments, where .git is not in
// the build context), while the VCS data depends on the environment: Go
// records it only under -buildvcs=auto or true, only in a checkout whose
// .git is a directory, and only where git answers. So the same source built
// with the same stamp says the same thing everywhere. bi may be nil.
func resolveVersion(bi *debug.BuildInfo, st stamp) versionInfo {
	v := versionInfo{Version: "devel", Commit: "unknown", Date: "unknown", Go: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi != nil {
		// `go install …@vX` and, since Go 1.24, a build in a checkout name
		// the module version.
		if mv := bi.Main.Version; mv != "" && mv != "(devel)" {
			v.Version = mv
		}
		v.Go = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				v.Date, v.DateKind = s.Value, "commit"
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if st.version != "" {
		v.Version = st.version
	}
	if st.commit != "" {
		// "modified" belongs to the VCS revision, not to the stamped one
		// (make's version says "-dirty" itself).
		v.Commit, v.Modified = st.commit, false
	}
	if st.date != "" {
		v.Date, v.DateKind = st.date, "build"
	}
	return v
}

func (v versionInfo) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "dreamgate %s\n", v.Version)
	commit := v.Commit
	if v.Modified {
		commit += " (with uncommitted changes)"
	}
	fmt.Fprintf(&b, "  commit: %s\n", commit)
	date := v.Date
	if v.DateKind == "commit" {
		date += " (commit time; not stamped by make)"
	}
	fmt.Fprintf(&b, "  built:  %s\n", date)
	fmt.Fprintf(&b, "  go:     %s %s\n", v.Go, v.Platform)
	return b.String()
}

func cmdVersion(_ context.Context, e *env, args []string) error {
	fs := e.flags("version")
	if err := e.parse(fs, args, 0); err != nil {
		return err
	}
	fmt.Fprint(e.stdout, readVersion().String())
	return nil
}
