package main

import (
	"bufio"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/macho"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// repoRoot is where the Makefile and the packaging files live.
const repoRoot = "../.."

// goBuild is one `go build` command line, reduced to what must agree
// between make and the Dockerfile.
type goBuild struct {
	env     []string // VAR=value before the command
	flags   []string // flags other than -o and -ldflags
	ldflags []string // -s, -w and -X names (values are per build)
	target  string
}

// parseGoBuild reads a shell command line holding `go build`.
func parseGoBuild(t *testing.T, line string) goBuild {
	t.Helper()
	words := shellWords(line)
	var b goBuild
	i := 0
	for ; i < len(words) && strings.Contains(words[i], "=") && !strings.HasPrefix(words[i], "-"); i++ {
		b.env = append(b.env, words[i])
	}
	if i+1 >= len(words) || filepath.Base(words[i]) != "go" || words[i+1] != "build" {
		t.Fatalf("not a go build command: %q", line)
	}
	for i += 2; i < len(words); i++ {
		w := words[i]
		switch {
		case w == "-o":
			i++
		case w == "-ldflags":
			i++
			ld := strings.Fields(words[i])
			for j := 0; j < len(ld); j++ {
				if ld[j] == "-X" && j+1 < len(ld) {
					name, _, _ := strings.Cut(ld[j+1], "=")
					b.ldflags = append(b.ldflags, "-X "+name)
					j++
				} else {
					b.ldflags = append(b.ldflags, ld[j])
				}
			}
		case strings.HasPrefix(w, "-"):
			b.flags = append(b.flags, w)
		default:
			b.target = w
		}
	}
	return b
}

// shellWords splits on blanks, keeping double-quoted text together.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inQuote, inWord := false, false
	for _, r := range s {
		switch {
		case r == '"':
			inQuote, inWord = !inQuote, true
		case (r == ' ' || r == '\t') && !inQuote:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

func needMake(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("make is not installed: cannot read the Makefile's build command")
	}
}

// makeBuildLine is the go build command `make build` runs.
func makeBuildLine(t *testing.T) string {
	t.Helper()
	needMake(t)
	out, err := exec.Command("make", "-s", "-n", "-C", repoRoot, "build", "GO=go", "VERSION=v", "COMMIT=c", "DATE=d").Output()
	if err != nil {
		t.Fatalf("make -n build: %v", err)
	}
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.Contains(line, " build ") {
			return line
		}
	}
	t.Fatalf("make -n build runs no go build:\n%s", out)
	return ""
}

// Docker cannot run on the CI machine, so the Dockerfile is checked by
// reading it: it must build what `make build` builds, the same way.
func TestDockerfileBuildsLikeMake(t *testing.T) {
	mk := parseGoBuild(t, makeBuildLine(t))
	data, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	var dockerLine string
	var froms int
	var user, volume, health bool
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "FROM "):
			froms++
		case strings.HasPrefix(line, "RUN ") && strings.Contains(line, "go build"):
			dockerLine = strings.TrimPrefix(line, "RUN ")
		case strings.HasPrefix(line, "USER "):
			user = !slices.Contains([]string{"root", "0"}, strings.Fields(line)[1])
		case strings.HasPrefix(line, "VOLUME "):
			volume = true
		case strings.HasPrefix(line, "HEALTHCHECK "):
			health = true
		}
	}
	if dockerLine == "" {
		t.Fatal("the Dockerfile has no RUN … go build line")
	}
	dk := parseGoBuild(t, dockerLine)
	if !reflect.DeepEqual(mk, dk) {
		t.Errorf("the Dockerfile builds differently from make build:\nmake:   %+v\ndocker: %+v", mk, dk)
	}
	if mk.target != "./cmd/dreamgate" || !slices.Contains(mk.env, "CGO_ENABLED=0") {
		t.Errorf("make build: %+v; want a cgo-free build of ./cmd/dreamgate", mk)
	}
	// The stamp is the version's one source: the toolchain's VCS stamping
	// would fail the build where git refuses the checkout.
	if !slices.Contains(mk.flags, "-buildvcs=false") {
		t.Errorf("make build: flags %v; want -buildvcs=false", mk.flags)
	}
	if froms < 2 || !user || !volume || !health || !strings.Contains(string(data), "/healthz") {
		t.Errorf("Dockerfile: multi-stage=%v non-root=%v volume=%v healthcheck=%v", froms >= 2, user, volume, health)
	}
}

func TestSystemdUnitVerifies(t *testing.T) {
	unit, err := os.ReadFile(filepath.Join(repoRoot, "packaging", "systemd", "dreamgate.service"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"DynamicUser=yes", "StateDirectory=dreamgate", "ProtectSystem=strict", "NoNewPrivileges=yes",
		"Restart=on-failure", "EnvironmentFile=", "ExecStart=/usr/local/bin/dreamgate ",
	} {
		if !strings.Contains(string(unit), "\n"+want) {
			t.Errorf("unit lacks %s", want)
		}
	}
	if _, err := exec.LookPath("systemd-analyze"); err != nil {
		t.Skip("systemd-analyze is not installed (Debian package systemd; .ci/run installs it): the unit was not verified")
	}
	// verify insists that ExecStart exists: point it at the test binary.
	text := strings.Replace(string(unit), "ExecStart=/usr/local/bin/dreamgate ", "ExecStart="+binPath+" ", 1)
	if problems := verifyUnit(t, text); problems != "" {
		t.Errorf("systemd-analyze verify:\n%s", problems)
	}
	// The check itself must catch a broken unit (an unknown key and a bad
	// value are only warnings to systemd).
	broken := strings.Replace(text, "Restart=on-failure", "Restart=sometimes\nRestartt=always", 1)
	if verifyUnit(t, broken) == "" {
		t.Error("a broken unit passed the check")
	}
}

// verifyUnit runs systemd-analyze verify on text and returns what it says
// about the unit ("" when nothing).
func verifyUnit(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "dreamgate.service")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("systemd-analyze", "verify", path).CombinedOutput()
	var about []string
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.Contains(line, "dreamgate.service") {
			about = append(about, line)
		}
	}
	if err != nil {
		about = append(about, "exit: "+err.Error(), string(out))
	}
	return strings.Join(about, "\n")
}

// One release target built for real, through `make release`: a cgo-free
// Mach-O for Apple silicon, stamped, with its checksum.
func TestReleaseBuildsACrossTarget(t *testing.T) {
	needMake(t)
	if testing.Short() {
		t.Skip("cross-compiles the standard library for darwin/arm64; skipped with -short")
	}
	dist := t.TempDir()
	cmd := exec.Command("make", "-s", "-C", repoRoot, "release", "GO=go", "DIST="+dist,
		"RELEASE_TARGETS=darwin/arm64", "VERSION=v0.0.0-test", "COMMIT=c0ffee", "DATE=2026-01-02T03:04:05Z")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	bin := filepath.Join(dist, "dreamgate-v0.0.0-test-darwin-arm64")
	f, err := macho.Open(bin)
	if err != nil {
		t.Fatalf("not a Mach-O file: %v", err)
	}
	if f.Cpu != macho.CpuArm64 {
		t.Errorf("cpu %v, want arm64", f.Cpu)
	}
	f.Close()
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" {
		t.Errorf("build settings %v: want CGO_ENABLED=0", settings)
	}
	data, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	// -trimpath keeps -ldflags out of the build info; the stamped strings
	// are in the binary's data.
	for _, want := range []string{"v0.0.0-test", "2026-01-02T03:04:05Z"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the binary does not carry %q", want)
		}
	}
	sum := sha256.Sum256(data)
	sums, err := os.ReadFile(filepath.Join(dist, "SHA256SUMS"))
	if want := hex.EncodeToString(sum[:]) + "  dreamgate-v0.0.0-test-darwin-arm64\n"; err != nil || string(sums) != want {
		t.Errorf("SHA256SUMS = %q, %v; want %q", sums, err, want)
	}
}

// The Slack manifest asks for what the Slack README lists: no YAML library
// here, so the check reads lines.
func TestSlackManifest(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "channels", "slack", "manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	text := string(data)
	if strings.Contains(text, "\t") {
		t.Error("manifest.yaml has a tab; YAML allows only spaces for indentation")
	}
	lines := map[string]bool{}
	for line := range strings.SplitSeq(text, "\n") {
		line, _, _ = strings.Cut(line, " #")
		lines[strings.TrimSpace(line)] = true
	}
	for _, want := range []string{
		"socket_mode_enabled: true", "messages_tab_enabled: true",
		"- app_mentions:read", "- chat:write", "- reactions:write", "- im:history", "- users:read",
		"- channels:read", "- groups:read", "- mpim:read", "- im:read",
		"- app_mention", "- message.im",
	} {
		if !lines[want] {
			t.Errorf("manifest.yaml lacks %q", want)
		}
	}
}

// A cold `make run` compiles for minutes, silently on Go's side: make says
// what is happening before it starts.
func TestMakeRunSaysWhatItDoes(t *testing.T) {
	needMake(t)
	out, err := exec.Command("make", "-s", "-n", "-C", repoRoot, "run", "GO=go").Output()
	if err != nil {
		t.Fatalf("make -n run: %v", err)
	}
	lines := strings.Split(string(out), "\n")
	build := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, "go build") })
	say := slices.IndexFunc(lines, func(l string) bool {
		return strings.HasPrefix(l, "echo") && strings.Contains(l, "downloads and compiles") && strings.Contains(l, "minutes")
	})
	if build < 0 || say < 0 || say > build {
		t.Errorf("make run does not say, before it compiles, that the first time takes minutes:\n%s", out)
	}
	// The terminal chat is make run's channel whatever stdin is: lines
	// piped into make run are answered, and the end of input stops it.
	if !slices.ContainsFunc(lines, func(l string) bool {
		return strings.Contains(l, " gateway --terminal") && !strings.HasPrefix(l, "echo")
	}) {
		t.Errorf("make run does not start the gateway with its terminal chat:\n%s", out)
	}
}

// make test uses -race only where a C compiler is, and says which.
func TestMakeTestRaceOnlyWithACompiler(t *testing.T) {
	needMake(t)
	dry := func(cc string) string {
		t.Helper()
		cmd := exec.Command("make", "-s", "-n", "-C", repoRoot, "test", "GO=go")
		cmd.Env = append(os.Environ(), "CC="+cc)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("make -n test: %v", err)
		}
		return string(out)
	}
	goTest := func(out string) []string {
		for line := range strings.SplitSeq(out, "\n") {
			if strings.Contains(line, "go test") {
				return strings.Fields(line)
			}
		}
		return nil
	}
	without := dry(filepath.Join(t.TempDir(), "no-such-cc"))
	if w := goTest(without); slices.Contains(w, "-race") || !slices.Contains(w, "CGO_ENABLED=0") || !strings.Contains(without, "NO RACE DETECTOR") {
		t.Errorf("make test without a C compiler:\n%s", without)
	}
	// A stand-in compiler: make only looks for it.
	cc := filepath.Join(t.TempDir(), "cc")
	if err := os.WriteFile(cc, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	with := dry(cc)
	if w := goTest(with); !slices.Contains(w, "-race") || !slices.Contains(w, "CGO_ENABLED=1") || !strings.Contains(with, "race detector on") {
		t.Errorf("make test with a C compiler:\n%s", with)
	}
}

// make test gives every test process an explicit budget, and each of the
// slowest tests of this package a process (and so a budget) of its own,
// after the rest, which skip them: on a loaded 2-core machine they passed
// the package's one budget together. Each one named is a test here.
func TestMakeTestGivesTheSlowTestsTheirOwnBudget(t *testing.T) {
	needMake(t)
	out, err := exec.Command("make", "-s", "-n", "-C", repoRoot, "test", "GO=go").Output()
	if err != nil {
		t.Fatalf("make -n test: %v", err)
	}
	skip := ""
	for line := range strings.SplitSeq(string(out), "\n") {
		if strings.Contains(line, "go test") && !regexp.MustCompile(`-timeout \d+m`).MatchString(line) {
			t.Errorf("a go test without an explicit -timeout: %s", line)
		}
		if m := regexp.MustCompile(`-skip '\^\(([\w|]+)\)\$'`).FindStringSubmatch(line); m != nil {
			skip = m[1]
		}
	}
	slow := strings.Split(skip, "|")
	for _, want := range []string{"TestMonthsOfFactsStayWithinBudget", "TestChaos", "TestWebPageInABrowser"} {
		if !slices.Contains(slow, want) {
			t.Errorf("make test skips %q in its first go test, want months, chaos and the browser at least (%s):\n%s", skip, want, out)
		}
	}
	loop := regexp.MustCompile(`for t in ([\w ]+); do`).FindStringSubmatch(string(out))
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	list := exec.Command(self, "-test.list", ".")
	list.Env = append(os.Environ(), builtBinEnv+"="+binPath) // no second build of the binary
	listed, err := list.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range slow {
		if loop == nil || !slices.Contains(strings.Fields(loop[1]), name) {
			t.Errorf("%s is skipped by the first go test but not run on its own:\n%s", name, out)
		}
		if !slices.Contains(strings.Fields(string(listed)), name) {
			t.Errorf("make test's SLOW_TESTS names %s, which is no test of cmd/dreamgate", name)
		}
	}
}
