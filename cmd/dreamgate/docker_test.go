package main

import (
	"bufio"
	"errors"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Docker cannot run on the CI machine: the files it reads are checked
// here by reading them, each against what the others and the docs say.

// dockerignored reports whether .dockerignore's patterns leave p (slash
// separated, relative to the context) out of the build context, by
// Docker's rules: a pattern matches p or one of its parent directories
// from the context's root ("config.json" is the root's only; "**/" before
// it matches at any depth), the last matching pattern decides, and "!"
// lets a path back in.
func dockerignored(patterns []string, p string) bool {
	out := false
	for _, pat := range patterns {
		keep := strings.HasPrefix(pat, "!")
		pat = strings.TrimPrefix(strings.TrimPrefix(pat, "!"), "/")
		anyDepth := strings.HasPrefix(pat, "**/")
		pat = strings.TrimPrefix(pat, "**/")
		for q := p; q != "."; q = path.Dir(q) {
			ok, _ := path.Match(pat, q)
			for rest := q; anyDepth && !ok && strings.Contains(rest, "/"); {
				_, rest, _ = strings.Cut(rest, "/")
				ok, _ = path.Match(pat, rest)
			}
			if ok {
				out = !keep
				break
			}
		}
	}
	return out
}

func readLines(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			lines = append(lines, line)
		}
	}
	return lines
}

// The build context holds the source, and neither the repository's
// history nor the secrets and config compose.yaml tells users to keep
// beside it; git does not take them either.
func TestDockerBuildContextLeavesSecretsOut(t *testing.T) {
	patterns := readLines(t, ".dockerignore")
	for _, p := range []string{".git", ".git/config", ".env", ".env.local", "config.json", "bin/dreamgate", "dist/SHA256SUMS"} {
		if !dockerignored(patterns, p) {
			t.Errorf(".dockerignore sends %s to the Docker daemon", p)
		}
	}
	for _, p := range []string{"go.mod", "go.sum", "cmd/dreamgate/main.go", "eval/scenarios/idle-then-return.json",
		"workspace-template/files/AGENTS.md", "workspace-template/files/memory/MEMORY.md"} {
		if dockerignored(patterns, p) {
			t.Errorf(".dockerignore leaves out %s, which the build needs", p)
		}
	}
	ignored := readLines(t, ".gitignore")
	for _, want := range []string{".env", "/config.json"} {
		if !slices.Contains(ignored, want) {
			t.Errorf(".gitignore lacks %s", want)
		}
	}
}

// dockerStages reads the Dockerfile's stages: each FROM line's name (or
// its position) and the instructions under it.
func dockerStages(t *testing.T) (names []string, lines map[string][]string) {
	t.Helper()
	lines = map[string][]string{}
	cur := ""
	for _, line := range readLines(t, "Dockerfile") {
		if f := strings.Fields(line); f[0] == "FROM" {
			cur = "stage" + string(rune('0'+len(names)))
			if len(f) == 4 && strings.EqualFold(f[2], "AS") {
				cur = f[3]
			}
			names = append(names, cur)
		}
		lines[cur] = append(lines[cur], line)
	}
	return names, lines
}

// The health and metrics port is reachable from outside the container
// and published on the host's loopback by default; compose needs no API
// key (a local model has none); a missing config.json stops compose
// instead of becoming a directory; the service drops every capability
// and cannot gain privileges; the MCP servers of docs/mcp.md have their
// runtimes in the image's mcp target.
func TestDockerFilesAgree(t *testing.T) {
	names, stages := dockerStages(t)
	all := strings.Join(readLines(t, "Dockerfile"), "\n")
	addr := regexp.MustCompile(`(?m)^ENV DREAMGATE_HEALTH_ADDR=0\.0\.0\.0:(\d+)$`).FindStringSubmatch(all)
	if addr == nil {
		t.Fatal("the Dockerfile does not set DREAMGATE_HEALTH_ADDR=0.0.0.0:<port>: /healthz and /metrics would listen on the container's loopback")
	}
	port := addr[1]
	for _, want := range []string{"EXPOSE " + port, "http://127.0.0.1:" + port + "/healthz"} {
		if !strings.Contains(all, want) {
			t.Errorf("the Dockerfile lacks %q (the health address's port is %s)", want, port)
		}
	}

	compose := strings.Join(readLines(t, "compose.yaml"), "\n")
	if strings.Contains(compose, ":?") {
		t.Error("compose.yaml requires a variable (${X:?…}); a local model needs no API key")
	}
	published := regexp.MustCompile(`"\$\{DREAMGATE_PUBLISH:-127\.0\.0\.1\}:(\d+):(\d+)"`).FindStringSubmatch(compose)
	if published == nil || published[2] != port {
		t.Errorf("compose.yaml does not publish the container's port %s on the host's loopback by default: %v", port, published)
	}
	for _, want := range []string{"type: bind", "source: ./config.json", "create_host_path: false", "read_only: true"} {
		if !strings.Contains(compose, want) {
			t.Errorf("compose.yaml's config mount lacks %q: a missing config.json would become a directory", want)
		}
	}
	// The gateway needs no capability and must never gain one, nor may
	// what it starts (MCP servers): a lines test, comments left out.
	for _, want := range []string{"cap_drop: [ALL]", `security_opt: ["no-new-privileges:true"]`} {
		if !slices.Contains(readLines(t, "compose.yaml"), want) {
			t.Errorf("compose.yaml's service lacks %q", want)
		}
	}

	// The last stage is the default image; the mcp stage has Node (npx)
	// and uv (uvx), the commands docs/mcp.md starts its servers with.
	if len(names) < 3 || !slices.Contains(names, "mcp") {
		t.Fatalf("stages %v: want build, the runtime, an mcp target and the default image", names)
	}
	mcp := strings.Join(stages["mcp"], "\n")
	doc, err := os.ReadFile(filepath.Join(repoRoot, "docs", "mcp.md"))
	if err != nil {
		t.Fatal(err)
	}
	for cmd, pkg := range map[string]string{"npx": "npm", "uvx": "uv"} {
		if strings.Contains(string(doc), `"command": "`+cmd+`"`) && !regexp.MustCompile(`apk add[^\n]* `+pkg+`\b`).MatchString(mcp) {
			t.Errorf("docs/mcp.md starts servers with %s, but the mcp target does not install %s", cmd, pkg)
		}
	}
	if u := last(userLines(stages["mcp"])); u == "" || u == "root" {
		t.Errorf("the mcp target runs as %q; want the non-root user", u)
	}
	raw, err := os.ReadFile(filepath.Join(repoRoot, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), "target: mcp") {
		t.Error("compose.yaml does not show how to build the mcp target")
	}
}

func userLines(lines []string) []string {
	var users []string
	for _, l := range lines {
		if f := strings.Fields(l); len(f) == 2 && f[0] == "USER" {
			users = append(users, f[1])
		}
	}
	return users
}

// The image sets the health address by environment, whatever config is
// mounted; a config path that is a directory (Docker's doing, for a bind
// mount of a file missing on the host) is named as such.
func TestContainerConfig(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, []byte(`{"gateway": {"healthAddr": "127.0.0.1:1"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"DREAMGATE_HEALTH_ADDR": "0.0.0.0:18790", "HOME": dir}
	cfg, err := loadConfig(cfgPath, func(k string) string { return env[k] })
	if err != nil || cfg.Gateway.HealthAddr != "0.0.0.0:18790" {
		t.Errorf("healthAddr %q, %v; want the environment's", cfg.Gateway.HealthAddr, err)
	}

	asDir := filepath.Join(dir, "mounted.json")
	if err := os.Mkdir(asDir, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err = loadConfig(asDir, func(k string) string { return env[k] })
	var ce *configError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "is a directory, not a config file") || !strings.Contains(err.Error(), "bind-mounted") {
		t.Errorf("a directory as config: %v", err)
	}
}
