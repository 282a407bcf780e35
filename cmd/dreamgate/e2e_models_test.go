package main

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// modelFakes are the three providers of the issue's config shape, each a
// fake of its own.
type modelFakes struct{ hosted, backup, local *llmtest.Server }

// setIssueShape writes the issue's models and use into h's config, each
// model at its fake (hosted keeps its provider, so its key comes from
// OPENROUTER_API_KEY).
func setIssueShape(t *testing.T, h *harness) modelFakes {
	f := modelFakes{llmtest.New(t), llmtest.New(t), llmtest.New(t)}
	h.set("models", map[string]any{
		"hosted": map[string]any{"provider": "openrouter", "baseURL": f.hosted.URL(), "model": "anthropic/claude-sonnet-4"},
		"backup": map[string]any{"baseURL": f.backup.URL(), "apiKeyEnv": "OPENAI_API_KEY", "model": "gpt-4o-mini", "contextWindow": 128000},
		"local":  map[string]any{"baseURL": f.local.URL(), "model": "llama3.2"},
	})
	h.set("use", map[string]any{
		"chat": []string{"hosted", "backup", "local"}, "archive": []string{"local", "backup"},
		"dream": []string{"backup", "local"},
	})
	return f
}

var modelKeys = map[string]string{"OPENROUTER_API_KEY": "sk-or-e2e", "OPENAI_API_KEY": "sk-oa-e2e"}

// seen checks that every request a fake received named model and carried
// the bearer key (none when key is "").
func seen(t *testing.T, name string, srv *llmtest.Server, n int, model, key string) {
	t.Helper()
	reqs := srv.Requests()
	if len(reqs) != n {
		t.Errorf("%s received %d requests, want %d", name, len(reqs), n)
	}
	want := ""
	if key != "" {
		want = "Bearer " + key
	}
	for i, r := range reqs {
		if r.Model != model || r.Header.Get("Authorization") != want || r.Problem != "" {
			t.Errorf("%s request %d: model %q, authorization %q, problem %q; want %q, %q", name, i, r.Model, r.Header.Get("Authorization"), r.Problem, model, want)
		}
	}
}

// A gateway with a config of the issue's shape: each purpose reaches the
// model it names (in each fake's request log, with that model's key); when
// the chat model refuses its key the backup answers, the log says so, and
// /status, /metrics and `dreamgate status` show it.
func TestModelsOfTheIssuesShapeThroughTheGateway(t *testing.T) {
	h := newHarness(t)
	f := setIssueShape(t, h)
	h.set("gateway.healthAddr", "127.0.0.1:0")
	f.hosted.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("hosted: noted") })
	f.local.SetResponder(func(llmtest.Request) llmtest.Reply {
		return llmtest.Text("- The user prefers tea over coffee")
	})
	it := startInteractive(t, h, func(k string) string { return modelKeys[k] })
	it.stderr.WaitFor(t, "/help for commands")
	if want := "models chat hosted → backup → local, archive local → backup, dream-analysis backup → local, dream-edit backup → local"; !strings.Contains(it.stderr.String(), want) {
		t.Errorf("banner lacks %q:\n%s", want, it.stderr)
	}

	// Chat goes to hosted.
	it.say(t, "I prefer tea over coffee.")
	it.stdout.WaitFor(t, "hosted: noted")
	seen(t, "hosted", f.hosted, 1, "anthropic/claude-sonnet-4", "sk-or-e2e")

	// /dream archives the conversation (local), then Dream analyses and
	// edits (backup).
	f.backup.Push(
		llmtest.Text("[USER] prefers tea over coffee"),
		llmtest.ToolCall("edit_file", `{"path":"USER.md","old_text":"## Preferences\n","new_text":"## Preferences\n- Prefers tea over coffee.\n"}`),
		llmtest.Text("Added the preference to USER.md."),
	)
	it.say(t, "/dream")
	it.stdout.WaitFor(t, "Dream: 1 change to USER.md")
	seen(t, "local", f.local, 1, "llama3.2", "")
	seen(t, "backup", f.backup, 3, "gpt-4o-mini", "sk-oa-e2e")
	if n := len(h.llm.Requests()); n != 0 {
		t.Errorf("the llm keys' endpoint, which no purpose uses, received %d requests", n)
	}

	// hosted refuses its key: backup answers, and the log says why.
	f.hosted.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Status(401, "") })
	f.backup.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("backup: still here") })
	it.say(t, "Are you there?")
	// The next prompt: the turn has ended (the answer streams before).
	it.stdout.WaitFor(t, "backup: still here\n> ")
	logText := readLog(t, h)
	for _, want := range []string{
		"the model's provider refused its key; the next model of the chain is asked",
		"model chain switched: another model answers until the one before it serves again",
		"from=hosted to=backup",
	} {
		if !strings.Contains(logText, want) {
			t.Errorf("gateway.log lacks %q:\n%s", want, logText)
		}
	}
	if strings.Contains(logText, "sk-or-e2e") || strings.Contains(logText, "sk-oa-e2e") {
		t.Error("a key reached the log")
	}

	it.say(t, "/status")
	it.stdout.WaitFor(t, "Up: ")
	for _, want := range []string{
		"Models, by purpose:",
		"  chat: hosted → backup → local; backup answered last; hosted failed (HTTP 401 (invalid_api_key)), tried again in ",
		"  archive: local → backup; local answered last",
		"  dream-analysis: backup → local; backup answered last",
		"  dream-edit: backup → local; backup answered last",
	} {
		if !strings.Contains(it.stdout.String(), want) {
			t.Errorf("/status lacks %q:\n%s", want, it.stdout)
		}
	}

	m := healthURL.FindStringSubmatch(it.stderr.String())
	if m == nil {
		t.Fatalf("no health address in the banner:\n%s", it.stderr)
	}
	got := scrapeMetrics(t, m[1]+"/metrics")
	checkMetrics(t, "after the fallback", got, map[string]float64{
		`dreamgate_llm_calls_total{model="hosted",purpose="chat"}`:           2,
		`dreamgate_llm_failures_total{model="hosted",purpose="chat"}`:        1,
		`dreamgate_llm_fallbacks_total{model="hosted",purpose="chat"}`:       1,
		`dreamgate_llm_calls_total{model="backup",purpose="chat"}`:           1,
		`dreamgate_llm_calls_total{model="local",purpose="archive"}`:         1,
		`dreamgate_llm_calls_total{model="backup",purpose="dream-analysis"}`: 1,
		`dreamgate_llm_calls_total{model="backup",purpose="dream-edit"}`:     2,
		`dreamgate_llm_cooling_down{model="hosted"}`:                         1,
		`dreamgate_llm_cooling_down{model="backup"}`:                         0,
		`dreamgate_model_calls_total{purpose="chat",outcome="ok"}`:           2,
	})
	for _, k := range []string{`dreamgate_llm_prompt_tokens_total{model="backup",purpose="chat"}`, `dreamgate_llm_completion_tokens_total{model="local",purpose="archive"}`} {
		if got[k] <= 0 {
			t.Errorf("%s = %v, want the tokens of its calls", k, got[k])
		}
	}
	readmeListsEveryFamily(t, got)

	// `dreamgate status` (another process, answered by the running
	// gateway) names each model and which answered last.
	u, err := url.Parse(m[1])
	if err != nil {
		t.Fatal(err)
	}
	h.set("gateway.healthAddr", net.JoinHostPort("127.0.0.1", u.Port()))
	r := h.runEnv([]string{"OPENROUTER_API_KEY=sk-or-e2e", "OPENAI_API_KEY=sk-oa-e2e"}, "status")
	if r.code != 0 {
		t.Fatalf("status: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"  hosted: anthropic/claude-sonnet-4 at " + f.hosted.URL() + " (window 128K), key from OPENROUTER_API_KEY — reachable",
		"  backup: gpt-4o-mini at " + f.backup.URL() + " (window 128K), key from OPENAI_API_KEY — reachable",
		"  local: llama3.2 at " + f.local.URL() + " (window 128K), no key — reachable",
		"Models by purpose (which answered last: as the running gateway says):",
		// The gateway answers status itself (its admin socket), with its
		// chains' own words.
		"  chat: hosted → backup → local; backup answered last; hosted failed (HTTP 401 (invalid_api_key)), tried again in ",
		"  archive: local → backup; local answered last",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "sk-or-e2e") {
		t.Error("status shows a key")
	}
}

// readLog is the interactive gateway's log file.
func readLog(t *testing.T, h *harness) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.state, "gateway.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The one-shot chat with the issue's shape: when the chat model fails
// before the first word (a model the provider does not know), the backup
// streams its answer, once; `dreamgate status` exits 1 only when a purpose
// has no model that answers.
func TestModelsOneShotThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	f := setIssueShape(t, h)
	f.hosted.Push(llmtest.Status(404, ""))
	f.backup.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("backup answers") })
	keys := []string{"OPENROUTER_API_KEY=sk-or-e2e", "OPENAI_API_KEY=sk-oa-e2e"}
	r := h.runEnv(keys, "chat", "-m", "hello")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "backup answers" {
		t.Fatalf("chat: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"the model was not found at its endpoint; the next model of the chain is asked", "models.hosted.model"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	seen(t, "hosted", f.hosted, 1, "anthropic/claude-sonnet-4", "sk-or-e2e")
	seen(t, "backup", f.backup, 1, "gpt-4o-mini", "sk-oa-e2e")

	// Every archive model down: status exits 1 and says which purpose.
	f.local.Close()
	f.backup.Close()
	r = h.runEnv(keys, "status")
	if r.code != 1 || !strings.Contains(r.stdout, "  archive: local → backup (prompts fit a 128K window) — no model of it can be used") {
		t.Errorf("status with the archive's models down: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "which answered last is known while the gateway runs") {
		t.Errorf("status without a gateway:\n%s", r.stdout)
	}
}

// A chat model that hangs, through the binary: the one-shot chat (not
// streamed when piped) gets the backup's answer after one try of the
// hanging model, at its timeout (1 s here) — not after five timeouts and
// the backoff between them — and the log says why.
func TestModelsHangingChatModelOneShot(t *testing.T) {
	h := newHarness(t)
	f := setIssueShape(t, h)
	f.hosted.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Slow(time.Hour, llmtest.Text("late")) })
	f.backup.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("backup answers") })
	h.cfg["models"].(map[string]any)["hosted"].(map[string]any)["timeoutSeconds"] = 1
	h.writeConfig()
	r := h.runEnv([]string{"OPENROUTER_API_KEY=sk-or-e2e", "OPENAI_API_KEY=sk-oa-e2e", "DREAMGATE_LOG_LEVEL=warn"}, "chat", "-m", "hello")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "backup answers" {
		t.Fatalf("chat: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	if n := len(f.hosted.Requests()); n != 1 {
		t.Errorf("the hanging model was tried %d times, want once", n)
	}
	if want := "hosted: timed out after 1s"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
}

// The same in a chat turn that streams (Slack): with a long timeout, the
// backup answers once the hanging model has not begun within its first
// byte's limit (firstByteSeconds, 1 s here), after one try.
func TestModelsHangingChatModelInSlack(t *testing.T) {
	h := newHarness(t)
	f := setIssueShape(t, h)
	f.hosted.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Slow(time.Hour, llmtest.Text("late")) })
	f.backup.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("backup answers") })
	hosted := h.cfg["models"].(map[string]any)["hosted"].(map[string]any)
	hosted["timeoutSeconds"], hosted["firstByteSeconds"] = 120, 1
	sl := fakeslack.New(fakeslack.Config{TeamID: "T1", Events: slackManifestEvents(t), People: []fakeslack.Person{{ID: "UANA", Name: "Ana"}}})
	t.Cleanup(sl.Close)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(), "replyInThread": false,
	})
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack")
	w := &slackWorld{sl: sl, gw: gw, users: map[string]string{}, teams: map[string]string{}}
	dm := place{name: "Ana's DM", key: "slack:DANA"}
	w.users[dm.key], w.teams[dm.key] = "UANA", "T1"
	w.say(t, dm, "Are you there?")
	// The stream's message is edited as the answer comes: wait for all
	// of it (this waits, it times nothing).
	for deadline := time.Now().Add(2 * time.Minute); !slices.Contains(w.shown(dm), "backup answers"); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no whole answer from the backup: %q\n%s", w.shown(dm), gw.stderr.String())
		}
	}
	if n := len(f.hosted.Requests()); n != 1 {
		t.Errorf("the hanging model was tried %d times, want once", n)
	}
	if want := "hosted: no answer began within 1s"; !strings.Contains(gw.stderr.String(), want) {
		t.Errorf("the log lacks %q:\n%s", want, gw.stderr.String())
	}
}

// `dreamgate eval --archive-model NAME` plays the scenarios with that
// model alone writing the archive: its fake receives the archive calls,
// and only them; the other purposes keep their models.
func TestEvalComparesArchiveModels(t *testing.T) {
	h := newHarness(t)
	fakes := map[string]*llmtest.Server{}
	models := map[string]any{}
	for _, name := range []string{"a", "b", "c"} {
		s := llmtest.New(t)
		s.SetResponder(llmtest.MemoryModel)
		fakes[name] = s
		models[name] = map[string]any{"baseURL": s.URL(), "model": name + "-id"}
	}
	h.set("models", models)
	h.set("use", map[string]any{"chat": "a", "archive": []string{"a", "b"}, "dream": "c"})
	r := h.run("eval", "--scenario", filepath.Join("testdata", "eval", "rules.json"), "--json", "--archive-model", "b")
	if r.code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	if want := "models chat a, archive b, dream-analysis c, dream-edit c"; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
	}
	system := func(r llmtest.Request) string {
		if len(r.Messages) == 0 {
			return ""
		}
		return r.Messages[0].Content
	}
	archive := fakes["b"].Requests()
	if len(archive) == 0 {
		t.Fatal("the archive model received no request")
	}
	for i, q := range archive {
		if q.Model != "b-id" || system(q) != system(archive[0]) {
			t.Errorf("archive model's request %d: model %q, or not an archive call", i, q.Model)
		}
	}
	for name, s := range map[string]*llmtest.Server{"a": fakes["a"], "c": fakes["c"]} {
		if len(s.Requests()) == 0 {
			t.Errorf("%s received no request", name)
		}
		for _, q := range s.Requests() {
			if system(q) == system(archive[0]) {
				t.Errorf("%s received an archive call", name)
			}
		}
	}
	if rep := decodeReport(t, r.stdout); !rep.Passed {
		t.Errorf("report did not pass: %+v", rep)
	}
	if r := h.run("eval", "--archive-model", "nope"); r.code != 2 || !strings.Contains(r.stderr, `--archive-model: no model is named "nope"; models has a, b, c, llm (the llm keys)`) {
		t.Errorf("unknown model: exit %d\n%s", r.code, r.stderr)
	}
}
