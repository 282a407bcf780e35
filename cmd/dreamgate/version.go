package main

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// Stamped by `make build` and `make release` with -ldflags -X; a plain
// `go build` or `go install` leaves them empty and the build info answers.
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

// readVersion reads the version from the build info the Go toolchain embeds
// (module version for `go install …@vX`, VCS revision and time for a build
// from a checkout), overridden by what make stamped in.
func readVersion() versionInfo {
	v := versionInfo{Version: "devel", Commit: "unknown", Date: "unknown", Go: runtime.Version(),
		Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if bi, ok := debug.ReadBuildInfo(); ok {
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
	if version != "" {
		v.Version = version
	}
	if commit != "" && v.Commit == "unknown" {
		v.Commit = commit
	}
	if buildDate != "" {
		v.Date, v.DateKind = buildDate, "build"
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
