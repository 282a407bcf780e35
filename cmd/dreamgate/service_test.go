package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// interactive runs `dreamgate gateway` in this process as if a person sat
// at a terminal: every stream reports itself as a TTY.
type interactive struct {
	in             *io.PipeWriter
	stdout, stderr *testkit.Buffer
	code           chan int
}

func startInteractive(t *testing.T, h *harness, getenv func(string) string, args ...string) *interactive {
	t.Helper()
	pr, pw := io.Pipe()
	it := &interactive{in: pw, stdout: &testkit.Buffer{}, stderr: &testkit.Buffer{}, code: make(chan int, 1)}
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	e := &env{stdin: pr, stdout: it.stdout, stderr: it.stderr, getenv: getenv, isTTY: func(any) bool { return true }}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { it.code <- runEnv(ctx, e, append([]string{"--config", h.cfgPath, "gateway"}, args...)) }()
	t.Cleanup(func() {
		cancel()
		pw.Close()
		select {
		case <-it.code:
		case <-time.After(20 * time.Second):
			t.Error("the gateway did not stop")
		}
	})
	return it
}

func (it *interactive) say(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(it.in, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

func (it *interactive) waitExit(t *testing.T) int {
	t.Helper()
	select {
	case code := <-it.code:
		it.code <- code // for the cleanup
		return code
	case <-time.After(20 * time.Second):
		t.Fatalf("the gateway kept running after the person left; stdout:\n%s\nstderr:\n%s", it.stdout, it.stderr)
		return -1
	}
}

func TestInteractiveGatewayFirstScreenAndLeaving(t *testing.T) {
	for _, how := range []string{"/quit", "Ctrl-D"} {
		t.Run(how, func(t *testing.T) {
			h := newHarness(t)
			h.set("gateway.healthAddr", "127.0.0.1:0")
			h.llm.Push(llmtest.Text("hello back"))
			it := startInteractive(t, h, nil)

			it.stderr.WaitFor(t, "/help for commands, Ctrl-D or /quit to leave.")
			banner := it.stderr.String()
			for _, want := range []string{"model test-model at " + h.llm.URL(), "workspace " + h.ws, "health http://127.0.0.1:", "logs " + filepath.Join(h.state, "gateway.log")} {
				if !strings.Contains(banner, want) {
					t.Errorf("banner lacks %q:\n%s", want, banner)
				}
			}
			it.say(t, "hi")
			it.stdout.WaitFor(t, "hello back")
			it.say(t, "/help")
			it.stdout.WaitFor(t, "Ctrl-D or /quit leaves.")

			if how == "/quit" {
				it.say(t, "/quit")
			} else {
				it.in.Close()
			}
			if code := it.waitExit(t); code != 0 {
				t.Errorf("exit code %d; stderr:\n%s", code, it.stderr)
			}
			// Log lines went to the file, not between the chat lines.
			if s := it.stderr.String(); strings.Contains(s, "level=") || strings.Contains(s, `"level"`) {
				t.Errorf("log lines on the terminal:\n%s", s)
			}
			logs, err := os.ReadFile(filepath.Join(h.state, "gateway.log"))
			if err != nil || !strings.Contains(string(logs), "gateway running") || !strings.Contains(string(logs), "shutting down") {
				t.Errorf("log file: %v\n%s", err, logs)
			}
			if n := len(h.llm.Requests()); n != 1 {
				t.Errorf("/quit or /help reached the model: %d requests", n)
			}
		})
	}
}

func TestHeadlessGatewayLeavesTheTerminalOut(t *testing.T) {
	h := newHarness(t)
	gw := h.startGateway(t) // stdin is /dev/null, as under systemd
	gw.waitServing(t)
	resp, err := http.Get(gw.health)
	if err != nil {
		t.Fatal(err)
	}
	var body healthReport
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || body.Status != "ok" {
		t.Errorf("/healthz %d %+v", resp.StatusCode, body)
	}
	if _, ok := body.Channels["terminal"]; ok {
		t.Errorf("a headless gateway runs the terminal chat: %+v", body.Channels)
	}
	if body.Model == nil || body.Model.Name != "test-model" || body.Model.State != "unknown" {
		t.Errorf("model state %+v", body.Model)
	}
	resp, err = http.Get(strings.TrimSuffix(gw.health, "healthz") + "readyz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("/readyz %d", resp.StatusCode)
	}
}

func TestGatewayTerminalFlagReadsPipedInput(t *testing.T) {
	h := newHarness(t)
	h.llm.Push(llmtest.Text("piped answer"))
	cmd := exec.Command(binPath, "--config", h.cfgPath, "gateway", "--terminal")
	cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH")}
	cmd.Stdin = strings.NewReader("a question\n")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		// The end of the input ends the gateway, after the turn is answered.
		if err != nil || strings.TrimSpace(out.String()) != "piped answer" {
			t.Errorf("gateway --terminal: %v, stdout %q, stderr:\n%s", err, out.String(), errb.String())
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("gateway --terminal did not stop at the end of its input; stderr:\n%s", errb.String())
	}
}

// stubChannel reports a fixed health.
type stubChannel struct{ state string }

func (s stubChannel) Name() string                                   { return "stub" }
func (s stubChannel) Run(ctx context.Context, _ channels.Sink) error { <-ctx.Done(); return nil }
func (s stubChannel) Send(context.Context, channels.Outbound) error  { return nil }
func (s stubChannel) Health() channels.Health                        { return channels.Health{State: s.state} }

func TestHealthAnswers200OnlyWhenServing(t *testing.T) {
	h := newHarness(t)
	a := h.app()
	model := llm.New(llm.Config{BaseURL: h.llm.URL(), Model: "m", MaxTries: 1, BreakerThreshold: 1})
	get := func(hs *healthState, path string) (int, healthReport) {
		t.Helper()
		rec := &recorder{header: http.Header{}}
		req, _ := http.NewRequest(http.MethodGet, path, nil)
		hs.handler().ServeHTTP(rec, req)
		var body healthReport
		if err := json.Unmarshal(rec.body.Bytes(), &body); err != nil {
			t.Fatalf("%s: %v: %s", path, err, rec.body.String())
		}
		if rec.code == 0 {
			rec.code = http.StatusOK
		}
		return rec.code, body
	}
	check := func(name string, hs *healthState, wantStatus string, health, ready int) {
		t.Helper()
		code, body := get(hs, "/healthz")
		if code != health || body.Status != wantStatus {
			t.Errorf("%s: /healthz %d %q, want %d %q", name, code, body.Status, health, wantStatus)
		}
		if code, _ := get(hs, "/readyz"); code != ready {
			t.Errorf("%s: /readyz %d, want %d", name, code, ready)
		}
	}

	check("starting", &healthState{}, "starting", 503, 503)

	g, _ := a.gateway(false)
	g.AddChannel(stubChannel{channels.StateConnected})
	serving := &healthState{}
	serving.set(g, model)
	check("serving", serving, "ok", 200, 200)

	// The model's breaker opens: still serving (users are told), not ready.
	h.llm.Push(llmtest.Status(503, ""))
	if _, err := model.Chat(t.Context(), llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}); err == nil {
		t.Fatal("want a failed call")
	}
	check("breaker open", serving, "ok", 200, 503)
	if _, body := get(serving, "/healthz"); body.Model.State != "unreachable" || !body.Model.BreakerOpen || body.Model.LastError != llm.ClassUnavailable || body.Model.LastErrorAt == nil {
		t.Errorf("model after a 503: %+v", body.Model)
	}

	g2, _ := a.gateway(false)
	g2.AddChannel(stubChannel{channels.StateReconnecting})
	degraded := &healthState{}
	degraded.set(g2, a.model)
	check("degraded", degraded, "degraded", 503, 503)

	serving.stopping.Store(true)
	check("stopping", serving, "stopping", 503, 503)
}

type recorder struct {
	header http.Header
	body   bytes.Buffer
	code   int
}

func (r *recorder) Header() http.Header { return r.header }
func (r *recorder) Write(p []byte) (int, error) {
	return r.body.Write(p)
}
func (r *recorder) WriteHeader(code int) { r.code = code }

func TestModelFromTheEnvironment(t *testing.T) {
	h := newHarness(t)
	tests := []struct {
		env  []string
		want string
	}{
		{[]string{"OPENAI_MODEL=gpt-4o-mini"}, "gpt-4o-mini"},
		{[]string{"DREAMGATE_MODEL=anthropic/claude-sonnet-4", "OPENAI_MODEL=gpt-4o-mini"}, "anthropic/claude-sonnet-4"},
	}
	for i, tt := range tests {
		h.llm.Push(llmtest.Text("ok"))
		r := h.runEnv(tt.env, "chat", "-m", "hi")
		reqs := h.llm.Requests()
		if r.code != 0 || len(reqs) != i+1 || reqs[i].Model != tt.want {
			t.Errorf("%v: exit %d, stderr %q, model sent %q, want %q", tt.env, r.code, r.stderr, reqs[len(reqs)-1].Model, tt.want)
		}
	}
}

func TestBadEnvironmentValueIsNamed(t *testing.T) {
	h := newHarness(t)
	for _, tt := range []struct{ env, name string }{
		{"OPENAI_BASE_URL=api.openai.com/v1", "OPENAI_BASE_URL"},
		{"DREAMGATE_MODEL= ", "DREAMGATE_MODEL"},
	} {
		r := h.runEnv([]string{tt.env}, "status")
		if r.code != 2 || !strings.Contains(r.stderr, "environment variable "+tt.name) || strings.Contains(r.stderr, h.cfgPath) {
			t.Errorf("%s: exit %d, stderr %q; want 2 naming %s and not the file", tt.env, r.code, r.stderr, tt.name)
		}
	}
}

func TestMissingConfigFileIsAnError(t *testing.T) {
	h := newHarness(t)
	missing := filepath.Join(h.home, "typo.json")
	for _, cmd := range []string{"status", "gateway", "chat"} {
		r := h.runArgs("--config", missing, cmd)
		if r.code != 2 || !strings.Contains(r.stderr, missing) {
			t.Errorf("%s with a missing --config: exit %d, stderr %q", cmd, r.code, r.stderr)
		}
	}
	// onboard is how that file gets written.
	if r := h.runArgs("--config", missing, "onboard"); r.code != 0 {
		t.Errorf("onboard: exit %d %s", r.code, r.stderr)
	}
}

func TestStatusShowsChannelsAndFailsWhenTheModelIsDown(t *testing.T) {
	h := newHarness(t)
	h.set("channels.discord", map[string]any{"enabled": true, "token": "file-token-SECRET"})
	r := h.runEnv([]string{"SLACK_BOT_TOKEN=xoxb-env-SECRET"}, "status")
	if r.code != 0 {
		t.Fatalf("status with a reachable model: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"Channel terminal: enabled",
		"Channel slack: off (SLACK_BOT_TOKEN is set, but channels.slack.enabled is false)",
		"Channel discord: enabled, token set",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout+r.stderr, "SECRET") {
		t.Errorf("status shows a token:\n%s", r.stdout)
	}

	h.set("llm.baseURL", "http://"+freeAddr(t)+"/v1") // nothing listens
	r = h.runArgs("--config", h.cfgPath, "status")
	if r.code != 1 || !strings.Contains(r.stdout, "cannot connect") {
		t.Errorf("status with the model down: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestVersion(t *testing.T) {
	h := newHarness(t)
	r := h.runArgs("version")
	if r.code != 0 || !strings.Contains(r.stdout, "go:     "+runtime.Version()) {
		t.Errorf("version: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r2 := h.runArgs("--version"); r2.stdout != r.stdout {
		t.Errorf("--version printed %q, version %q", r2.stdout, r.stdout)
	}

	// What make stamps in is what it prints, also where the toolchain
	// records the checkout's VCS data (Go's default, whatever this
	// machine's go env says).
	bin := filepath.Join(t.TempDir(), "dreamgate")
	ld := "-X main.version=v9.8.7 -X main.commit=0123abc -X main.buildDate=2026-01-02T03:04:05Z"
	build := exec.Command("go", "build", "-ldflags", ld, "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=-buildvcs=auto")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"dreamgate v9.8.7\n", "commit: 0123abc", "built:  2026-01-02T03:04:05Z\n"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("stamped version lacks %q:\n%s", want, out)
		}
	}
}

// The stamp wins over the VCS data the toolchain records, field by field;
// where nothing is stamped, the build info answers.
func TestResolveVersion(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.99", Main: debug.Module{Version: "v0.0.0-20260102030405-aaaaaaaaaaaa"},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "aaaaaaaaaaaaaaaa"},
			{Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		}}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		st   stamp
		want versionInfo
	}{
		{"stamped over vcs", bi, stamp{"v1.2.3", "0123abc", "2026-05-06T07:08:09Z"},
			versionInfo{Version: "v1.2.3", Commit: "0123abc", Date: "2026-05-06T07:08:09Z", DateKind: "build", Go: "go1.99"}},
		{"vcs only", bi, stamp{},
			versionInfo{Version: "v0.0.0-20260102030405-aaaaaaaaaaaa", Commit: "aaaaaaaaaaaaaaaa", Date: "2026-01-02T03:04:05Z",
				DateKind: "commit", Go: "go1.99", Modified: true}},
		{"commit stamped alone", bi, stamp{commit: "0123abc"},
			versionInfo{Version: "v0.0.0-20260102030405-aaaaaaaaaaaa", Commit: "0123abc", Date: "2026-01-02T03:04:05Z",
				DateKind: "commit", Go: "go1.99"}},
		{"nothing known", nil, stamp{},
			versionInfo{Version: "devel", Commit: "unknown", Date: "unknown", Go: runtime.Version()}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.want.Platform = runtime.GOOS + "/" + runtime.GOARCH
			if got := resolveVersion(tc.bi, tc.st); got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

// runEnv runs dreamgate with the harness config and extra environment.
func (h *harness) runEnv(extra []string, args ...string) runResult {
	h.t.Helper()
	return h.exec(extra, append([]string{"--config", h.cfgPath}, args...)...)
}

// runArgs runs dreamgate with exactly these arguments.
func (h *harness) runArgs(args ...string) runResult {
	h.t.Helper()
	return h.exec(nil, args...)
}

func (h *harness) exec(extra []string, args ...string) runResult {
	h.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binPath, args...)
	cmd.Env = append([]string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}, extra...)
	cmd.Stdin = strings.NewReader("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		h.t.Fatalf("running dreamgate: %v", err)
	}
	return runResult{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode()}
}

// waitServing polls /healthz until the gateway says it is serving; the
// gateway is another process, so there is nothing else to wait on.
func (p *gatewayProc) waitServing(t *testing.T) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		if hb, err := p.healthz(); err == nil && hb.Status == "ok" {
			return
		}
		select {
		case <-deadline:
			t.Fatalf("gateway never served; log:\n%s", p.stderr.String())
		case <-p.exited:
			t.Fatalf("gateway exited; log:\n%s", p.stderr.String())
		case <-tick.C:
		}
	}
}

// The terminal's hint names what the operator set: the environment
// variable when the key came from one, the config key otherwise.
func TestModelHintNamesTheSettingUsed(t *testing.T) {
	h := newHarness(t)
	for _, tt := range []struct {
		env  []string
		want string
	}{
		{[]string{"OPENAI_API_KEY=sk-env-SECRET"}, "check OPENAI_API_KEY."},
		{nil, "check llm.apiKey."},
	} {
		h.llm.Push(llmtest.Status(401, ""))
		r := h.runEnv(tt.env, "chat", "-m", "hi")
		if r.code != 1 || !strings.Contains(r.stderr, tt.want) || strings.Contains(r.stderr, "SECRET") {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", tt.env, r.code, r.stderr, tt.want)
		}
	}
	// No key at all: the hint is not to check it, but that there is none.
	h.set("llm.apiKey", "")
	h.llm.Push(llmtest.Status(401, ""))
	r := h.run("chat", "-m", "hi")
	want := "no API key is set (OPENAI_API_KEY or llm.apiKey)"
	if r.code != 1 || !strings.Contains(r.stderr, want) || strings.Contains(r.stderr, "check llm.apiKey") {
		t.Errorf("without a key: exit %d, stderr %q; want 1 and %q", r.code, r.stderr, want)
	}
}

// Lines piped into the chat are answered in their order, commands too:
// /status (which overtakes waiting messages for a person at a terminal or
// in Slack) reports on the lines before it, and /stop finds nothing left
// running. Both the chat and the gateway's terminal.
func TestPipedLinesAreAnsweredInOrder(t *testing.T) {
	for _, args := range [][]string{{"chat"}, {"gateway", "--terminal"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			h := newHarness(t)
			h.llm.SetResponder(func(r llmtest.Request) llmtest.Reply {
				return llmtest.Text("re: " + llmtest.Spoken(r.Messages[len(r.Messages)-1].Content))
			})
			cmd := exec.Command(binPath, append([]string{"--config", h.cfgPath}, args...)...)
			cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH")}
			cmd.Stdin = strings.NewReader("first\n/status\nsecond\n/stop\n")
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("%v; stderr:\n%s", err, errb.String())
			}
			got := out.String()
			first, status, second := strings.Index(got, "re: first"), strings.Index(got, "Tokens used:"), strings.Index(got, "re: second")
			if first < 0 || status < first || second < status || !strings.Contains(got, "in 1 calls") {
				t.Fatalf("answers out of order:\n%s", got)
			}
		})
	}
}

// A headless gateway with no channel says so in its log: under a service
// manager it would otherwise run with nobody able to reach it.
func TestHeadlessGatewayWithoutChannelsWarns(t *testing.T) {
	h := newHarness(t)
	p := h.startGateway(t)
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(p.stderr.String(), "no channel to talk through") {
		if time.Now().After(deadline) {
			t.Fatalf("no warning; log:\n%s", p.stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if hb, err := p.healthz(); err != nil || hb.Status != "ok" {
		t.Errorf("healthz = %+v, %v; the gateway still runs", hb, err)
	}
}
