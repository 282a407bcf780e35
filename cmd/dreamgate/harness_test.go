package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/mcp/mcptest"
)

// binPath is the dreamgate binary built once for the end-to-end tests: they
// run the real program, as a user would.
var binPath string

func TestMain(m *testing.M) {
	// The memory page's door test runs this test binary as a plain HTTP
	// client under another local account.
	maybeFetch()
	// The MCP tests run this test binary as their stdio MCP server.
	mcptest.MaybeServe()
	// The unit's sandbox test runs Node through this binary.
	maybeExecUnderMDWE()
	if bin := os.Getenv(builtBinEnv); bin != "" {
		// The PostgreSQL pass (engine_test.go) runs this test binary
		// again, with the binary its parent built.
		binPath = bin
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "dreamgate-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binPath = filepath.Join(dir, "dreamgate")
	// -buildvcs=false: where git refuses the checkout (another owner), Go's
	// default VCS stamping fails the build; these tests do not read it.
	build := exec.Command("go", "build", "-buildvcs=false", "-o", binPath, ".")
	build.Stdout, build.Stderr = os.Stdout, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building dreamgate:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// harness is one user's machine: a home, a config, a workspace, and a fake
// model server.
type harness struct {
	t       testing.TB
	home    string
	ws      string
	state   string
	cfgPath string
	llm     *llmtest.Server
	cfg     map[string]any
}

func newHarness(t testing.TB) *harness {
	t.Helper()
	home := t.TempDir()
	h := &harness{
		t: t, home: home,
		ws:      filepath.Join(home, "ws"),
		state:   filepath.Join(home, "state"),
		cfgPath: filepath.Join(home, "config.json"),
		llm:     llmtest.New(t),
	}
	h.cfg = map[string]any{
		"workspace": h.ws,
		"stateDir":  h.state,
		"llm": map[string]any{
			"baseURL": h.llm.URL(), "apiKey": "sk-test-secret", "model": "test-model",
			"contextWindow": 128000, "maxTokens": 1024, "timeoutSeconds": 5,
		},
		"agent":   map[string]any{"idleCompactAfterMinutes": 0},
		"gateway": map[string]any{"healthAddr": ""},
	}
	h.useEngine()
	h.writeConfig()
	return h
}

// app wires the harness's config in this process, as the commands do,
// with logs discarded.
func (h *harness) app() *app {
	h.t.Helper()
	cfg, err := loadConfig(h.cfgPath, func(string) string { return "" })
	if err != nil {
		h.t.Fatal(err)
	}
	a, err := newApp(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		h.t.Fatal(err)
	}
	h.t.Cleanup(a.close)
	return a
}

// set changes one config value by dotted path ("llm.contextWindow").
func (h *harness) set(path string, v any) {
	keys := strings.Split(path, ".")
	m := h.cfg
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
	h.writeConfig()
}

func (h *harness) writeConfig() {
	data, err := json.MarshalIndent(h.cfg, "", "  ")
	if err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(h.cfgPath, data, 0o600); err != nil {
		h.t.Fatal(err)
	}
}

type runResult struct {
	stdout, stderr string
	code           int
	elapsed        time.Duration
	maxRSSKB       int64
}

// run executes dreamgate with the harness config and a clean environment.
func (h *harness) run(args ...string) runResult {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, append([]string{"--config", h.cfgPath}, args...)...)
	cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	cmd.Stdin = strings.NewReader("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	if err := cmd.Start(); err != nil {
		h.t.Fatalf("running dreamgate: %v", err)
	}
	// Peak memory is read from /proc while the program runs: the rusage of
	// a child started by Go counts the parent's memory too (the child
	// shares it until exec), so it cannot be used.
	exited := make(chan struct{})
	peak := make(chan int64, 1)
	go func() {
		var hwm int64
		t := time.NewTicker(500 * time.Microsecond)
		defer t.Stop()
		for {
			if v := procStatusKB(cmd.Process.Pid, "VmHWM:"); v > hwm {
				hwm = v
			}
			select {
			case <-exited:
				peak <- hwm
				return
			case <-t.C:
			}
		}
	}()
	_ = cmd.Wait()
	res := runResult{stdout: out.String(), stderr: errb.String(), elapsed: time.Since(start)}
	close(exited)
	res.maxRSSKB = <-peak
	res.code = cmd.ProcessState.ExitCode()
	return res
}

// oneSentence checks that a user-facing error is a single short sentence
// with no stack trace, provider body or secret in it.
func oneSentence(t testing.TB, text string) {
	t.Helper()
	text = strings.TrimSpace(text)
	switch {
	case text == "":
		t.Error("expected one sentence, got nothing")
	case strings.Count(text, "\n") > 0:
		t.Errorf("expected one line, got:\n%s", text)
	case strings.Contains(text, llmtest.BodyMarker):
		t.Errorf("a provider body leaked: %s", text)
	case strings.Contains(text, "sk-test-secret"):
		t.Errorf("the API key leaked: %s", text)
	case strings.Contains(text, "goroutine ") || strings.Contains(text, "panic"):
		t.Errorf("a stack trace leaked: %s", text)
	}
}
