package llm_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// fleet is a few fake providers, each behind a named model with its own
// client, all on one settable clock; waits between tries take no time.
type fleet struct {
	clock *testkit.Clock
	logs  *testkit.LogRecorder
	srv   map[string]*llmtest.Server
	model map[string]*llm.Named
}

func newFleet(t *testing.T, mod func(name string, c *llm.Config), names ...string) *fleet {
	t.Helper()
	f := &fleet{
		clock: testkit.NewClock(time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)),
		logs:  &testkit.LogRecorder{},
		srv:   map[string]*llmtest.Server{},
		model: map[string]*llm.Named{},
	}
	for _, name := range names {
		srv := llmtest.New(t)
		c := newClient(t, srv.URL(), func(c *llm.Config) {
			c.Model = name + "-id"
			c.MaxTries = 3
			c.BreakerCooldown = 30 * time.Second
			if mod != nil {
				mod(name, c)
			}
		})
		llm.SetClock(c, f.clock.Now)
		llm.SetWait(c, func(ctx context.Context, _ time.Duration) error { return ctx.Err() })
		f.srv[name] = srv
		f.model[name] = llm.NewNamed(name, c)
	}
	return f
}

func (f *fleet) chain(purpose string, names ...string) *llm.Chain {
	ms := make([]*llm.Named, 0, len(names))
	for _, n := range names {
		ms = append(ms, f.model[n])
	}
	return llm.NewChain(purpose, ms, f.logs.Logger())
}

// requests is how many chat requests the fake of name has received.
func (f *fleet) requests(name string) int { return len(f.srv[name].Requests()) }

const contextLengthBody = `{"error":{"message":"This model's maximum context length is 8192 tokens. llmtest-provider-body","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`

// fallbackCase is one way the first model of a chain fails.
type fallbackCase struct {
	name string
	// fail makes the primary fail; it may use the fleet.
	fail func(f *fleet)
	// primaryTries is what the primary's fake sees of the call.
	primaryTries int
	// falls: the backup serves; cools: the primary is then passed over.
	falls, cools bool
	// logged is an ERROR or WARN line the fallback must not hide.
	logged string
}

// fallbackCases are the ways the first model can fail that the issue lists.
func fallbackCases() []fallbackCase {
	return []fallbackCase{
		{name: "5xx storm", fail: func(f *fleet) {
			f.srv["primary"].SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Status(503, "") })
		}, primaryTries: 2, falls: true, cools: true},
		{name: "timeout", fail: func(f *fleet) {
			f.srv["primary"].SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Slow(time.Hour, llmtest.Text("late")) })
		}, primaryTries: 1, falls: true, cools: true},
		{name: "429 with a long Retry-After", fail: func(f *fleet) {
			f.srv["primary"].SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Status(429, "20") })
		}, primaryTries: 1, falls: true, cools: true},
		{name: "429 with a short Retry-After", fail: func(f *fleet) {
			f.srv["primary"].SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Status(429, "0") })
		}, primaryTries: 2, falls: true, cools: true},
		{name: "failed outside the chain", fail: func(f *fleet) {
			// A call outside the chain failed: the model's one record
			// passes it over in the chain too.
			f.srv["primary"].Push(llmtest.Status(500, ""), llmtest.Status(500, ""), llmtest.Status(500, ""))
			if _, err := f.model["primary"].Client().Chat(context.Background(), userReq("x")); !errors.Is(err, llm.ErrUnavailable) {
				panic("the call outside the chain did not fail: " + err.Error())
			}
		}, primaryTries: 3, falls: true, cools: true},
		{name: "404 model not found", fail: func(f *fleet) {
			f.srv["primary"].Push(llmtest.Status(404, ""))
		}, primaryTries: 1, falls: true, cools: true, logged: "the model was not found at its endpoint; the next model of the chain is asked"},
		{name: "401 key refused", fail: func(f *fleet) {
			f.srv["primary"].Push(llmtest.Status(401, ""))
		}, primaryTries: 1, falls: true, cools: true, logged: "the model's provider refused its key; the next model of the chain is asked"},
		{name: "402 out of credit", fail: func(f *fleet) {
			f.srv["primary"].Push(llmtest.Status(402, ""))
		}, primaryTries: 1, falls: true, cools: true, logged: "the model's provider wants payment (out of credit); the next model of the chain is asked"},
		{name: "context length", fail: func(f *fleet) {
			f.srv["primary"].Push(llmtest.Reply{Status: 400, Body: contextLengthBody})
		}, primaryTries: 1, falls: true, cools: false, logged: "the prompt is longer than the model takes; the next model of the chain is asked. Its contextWindow is set larger than the window it serves"},
		{name: "context length said in words (vLLM)", fail: func(f *fleet) {
			f.srv["primary"].Push(llmtest.Reply{Status: 400, Body: `{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens.","type":"BadRequestError","param":null,"code":400}}`})
		}, primaryTries: 1, falls: true, cools: false, logged: "the prompt is longer than the model takes"},
		{name: "malformed answer", fail: func(f *fleet) {
			f.srv["primary"].Push(llmtest.Malformed())
		}, primaryTries: 1, falls: true, cools: true},
		{name: "400 bad request", fail: func(f *fleet) {
			f.srv["primary"].Push(llmtest.Status(400, ""))
		}, primaryTries: 1, falls: false},
	}
}

// Each way the first model can fail that the issue lists makes the next
// one serve, seen in what each fake received; a refusal of the request
// itself does not.
func TestChainFallsBackWhenTheFirstModelCannotServe(t *testing.T) {
	tests := fallbackCases()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFleet(t, func(name string, c *llm.Config) {
				if name == "primary" {
					if tt.name == "timeout" {
						// Only here: every try of this primary waits
						// on an answer that never comes.
						// Long enough that the fake has read each
						// request before the try is given up, on a
						// loaded machine too.
						c.Timeout = time.Second
					}
				}
			}, "primary", "backup")
			f.srv["backup"].SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("from backup") })
			tt.fail(f)
			before := f.requests("primary")
			chain := f.chain(llm.PurposeChat, "primary", "backup")

			resp, err := chain.Chat(t.Context(), userReq("hello"))
			if got := f.requests("primary") - before; got != tt.primaryTries && tt.name != "failed outside the chain" {
				t.Errorf("the primary's fake saw %d requests of the call, want %d", got, tt.primaryTries)
			}
			if !tt.falls {
				if err == nil || !errors.Is(err, llm.ErrRejected) {
					t.Fatalf("Chat = %q, %v; want the primary's rejection", resp.Content, err)
				}
				if n := f.requests("backup"); n != 0 {
					t.Errorf("the backup was asked %d times for a request the provider refused", n)
				}
				return
			}
			if err != nil {
				t.Fatalf("Chat: %v", err)
			}
			if resp.Content != "from backup" {
				t.Errorf("reply %q, want the backup's", resp.Content)
			}
			reqs := f.srv["backup"].Requests()
			if len(reqs) != 1 || reqs[0].Model != "backup-id" {
				t.Fatalf("the backup's fake saw %d requests (%+v), want one for backup-id", len(reqs), reqs)
			}
			if tt.name == "failed outside the chain" && f.requests("primary") != before {
				t.Errorf("a model that failed outside the chain was still sent %d requests", f.requests("primary")-before)
			}
			if tt.logged != "" && len(f.logs.Find(slog.LevelWarn, tt.logged)) != 1 {
				t.Errorf("no log line %q; got %v", tt.logged, f.logs.Records())
			}
			if n := f.logs.Count(slog.LevelWarn, "model chain switched: another model answers until the one before it serves again"); n != 1 {
				t.Errorf("%d switch lines, want 1", n)
			}
			st := f.model["primary"].Stats()[llm.PurposeChat]
			if want := (llm.ModelStats{Calls: 1, Failures: 1, Fallbacks: 1}); tt.name != "failed outside the chain" && st != want {
				t.Errorf("primary's stats %+v, want %+v", st, want)
			}

			// The next call: a cooling model is passed over; a prompt too
			// long for it leaves it in for the next one.
			before = f.requests("primary")
			if _, err := chain.Chat(t.Context(), userReq("again")); err != nil {
				t.Fatalf("second Chat: %v", err)
			}
			asked := f.requests("primary") > before
			if asked == tt.cools {
				t.Errorf("second call asked the primary: %v; want %v (cools %v)", asked, !tt.cools, tt.cools)
			}
			if f.model["primary"].Cooling() != tt.cools {
				t.Errorf("Cooling() = %v, want %v", !tt.cools, tt.cools)
			}
		})
	}
}

// A failed model is passed over for its cooldown, doubled at each failure
// in a row; after it one call tries it, and when it answers again the chain
// goes back to it. The log says so once each way. No sleep: the clock is
// moved.
func TestChainCoolsDownAndComesBack(t *testing.T) {
	f := newFleet(t, nil, "primary", "backup")
	down := true
	f.srv["primary"].SetResponder(func(llmtest.Request) llmtest.Reply {
		if down {
			return llmtest.Status(503, "")
		}
		return llmtest.Text("primary again")
	})
	f.srv["backup"].SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("backup") })
	chain := f.chain(llm.PurposeArchive, "primary", "backup")
	ctx := t.Context()

	call := func(step, want string, primaryAsked bool) {
		t.Helper()
		before := f.requests("primary")
		resp, err := chain.Chat(ctx, llm.Request{Purpose: llm.PurposeArchive, Messages: userReq(step).Messages})
		if err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		if resp.Content != want {
			t.Fatalf("%s: answered by %q, want %q", step, resp.Content, want)
		}
		if asked := f.requests("primary") > before; asked != primaryAsked {
			t.Fatalf("%s: primary asked %v, want %v", step, asked, primaryAsked)
		}
	}
	call("first failure", "backup", true)
	call("cooling", "backup", false)
	f.clock.Advance(29 * time.Second)
	call("still cooling", "backup", false)
	st := chain.Status()
	if st.Served != "backup" || st.Models[0].CoolingUntil.IsZero() {
		t.Fatalf("status %+v", st)
	}
	if got := st.Text(f.clock.Now(), true); got != "archive: primary → backup; backup answered last; primary failed (HTTP 503 after 2 tries), tried again in 1s" {
		t.Errorf("operator's status line %q", got)
	}
	if got := st.Text(f.clock.Now(), false); got != "archive: primary → backup; backup answered last; primary is not answering right now" {
		t.Errorf("public status line %q", got)
	}

	f.clock.Advance(2 * time.Second)
	call("trial fails", "backup", true)
	if n := f.requests("primary"); n != 3 {
		t.Errorf("primary saw %d requests; with a backup behind it a call is two tries, a trial one (2 + 1)", n)
	}
	f.clock.Advance(59 * time.Second)
	call("cooldown doubled", "backup", false)
	f.clock.Advance(2 * time.Second)
	down = false
	call("trial answers", "primary again", true)
	call("back", "primary again", true)

	if n := f.logs.Count(slog.LevelWarn, "model chain switched: another model answers until the one before it serves again"); n != 1 {
		t.Errorf("%d switch lines, want 1", n)
	}
	if n := f.logs.Count(slog.LevelInfo, "model chain switched back: an earlier model serves again"); n != 1 {
		t.Errorf("%d switch-back lines, want 1", n)
	}
	if f.model["primary"].Cooling() || !chain.Status().Models[0].CoolingUntil.IsZero() {
		t.Error("the primary still cools down after it answered")
	}
	if got := chain.Status().Text(f.clock.Now(), true); got != "archive: primary → backup; primary answered last" {
		t.Errorf("status line %q", got)
	}
}

// While one call tries a model whose cooldown ended, the others pass it
// over rather than all waiting on a model that may still be down.
func TestChainTriesACooledModelWithOneCallAtATime(t *testing.T) {
	f := newFleet(t, nil, "primary", "backup")
	f.srv["primary"].Push(llmtest.Status(503, ""), llmtest.Status(503, ""),
		llmtest.Slow(time.Hour, llmtest.Text("slow")))
	chain := f.chain(llm.PurposeChat, "primary", "backup")
	if _, err := chain.Chat(t.Context(), userReq("fail")); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(31 * time.Second)
	trialCtx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := chain.Chat(trialCtx, userReq("trial"))
		done <- err
	}()
	if _, err := f.srv["primary"].WaitRequests(t.Context(), 3); err != nil {
		t.Fatal(err)
	}
	if _, err := chain.Chat(t.Context(), userReq("meanwhile")); err != nil {
		t.Fatal(err)
	}
	if n := f.requests("primary"); n != 3 {
		t.Errorf("primary saw %d requests during its trial, want 3", n)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("abandoned trial: %v", err)
	}
	// An abandoned trial says nothing: the next call tries again.
	if _, err := chain.Chat(t.Context(), userReq("next")); err != nil {
		t.Fatal(err)
	}
	if n := f.requests("primary"); n != 4 {
		t.Errorf("primary saw %d requests, want a new trial (4)", n)
	}
}

// A streamed answer that broke off after some of it was shown is not asked
// of the next model (it would repeat what the person read); the next call
// goes there. One that failed before showing anything is.
func TestChainNeverRepeatsAStreamThatBrokeOff(t *testing.T) {
	f := newFleet(t, nil, "primary", "backup")
	f.srv["primary"].Push(llmtest.Reply{Text: "one two three four", CutAfter: 2})
	f.srv["backup"].SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("backup says hi") })
	chain := f.chain(llm.PurposeChat, "primary", "backup")

	var shown []string
	req := userReq("stream")
	req.OnDelta = func(s string) { shown = append(shown, s) }
	_, err := chain.Chat(t.Context(), req)
	if !errors.Is(err, llm.ErrUnavailable) {
		t.Fatalf("err = %v, want the broken stream", err)
	}
	if n := f.requests("backup"); n != 0 {
		t.Fatalf("the backup was asked %d times after part of the answer was shown", n)
	}
	if got := strings.Join(shown, ""); got != "one two" {
		t.Errorf("shown %q, want only the primary's part", got)
	}
	if len(f.logs.Find(slog.LevelWarn, "the answer broke off mid-stream; the next model is not asked, so the part already shown is not repeated")) != 1 {
		t.Errorf("no log line for the broken stream: %v", f.logs.Records())
	}

	shown = nil
	resp, err := chain.Chat(t.Context(), req)
	if err != nil || resp.Content != "backup says hi" {
		t.Fatalf("next call: %q, %v; want the backup (the primary cools down)", resp.Content, err)
	}
	if strings.Join(shown, "") != "backup says hi" {
		t.Errorf("shown %q", shown)
	}

	// Failing before the first fragment: the backup streams, once.
	f.clock.Advance(time.Hour)
	f.srv["primary"].Push(llmtest.Status(401, ""))
	shown = nil
	if _, err := chain.Chat(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	if strings.Join(shown, "") != "backup says hi" {
		t.Errorf("shown %q, want the backup's answer once", shown)
	}
}

// When every model fails, the error holds each failure and the operator's
// sentence names each model's cause; with every model cooling down, each is
// still tried.
func TestChainEveryModelFails(t *testing.T) {
	f := newFleet(t, nil, "a", "b")
	f.srv["a"].SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Status(503, "") })
	f.srv["b"].SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Status(401, "") })
	chain := f.chain(llm.PurposeChat, "a", "b")
	_, err := chain.Chat(t.Context(), userReq("x"))
	var ce *llm.ChainError
	if !errors.As(err, &ce) || len(ce.Failures) != 2 {
		t.Fatalf("err = %v, want a ChainError of two failures", err)
	}
	if !errors.Is(err, llm.ErrRejected) {
		t.Errorf("err does not unwrap to the last failure: %v", err)
	}
	want := "No model answered. a: The model is unavailable: HTTP 503 after 2 tries. b: The model provider refused the API key (HTTP 401); check llm.apiKey."
	if got := llm.UserMessage(err); got != want {
		t.Errorf("UserMessage =\n%q, want\n%q", got, want)
	}
	if got := llm.PublicMessage(err); got != llm.OperatorAbsent {
		t.Errorf("PublicMessage = %q", got)
	}
	if strings.Contains(err.Error(), testKey) || strings.Contains(llm.UserMessage(err), llmtest.BodyMarker) {
		t.Error("the error shows the key or a provider body")
	}
	ra, rb := f.requests("a"), f.requests("b")
	if _, err := chain.Chat(t.Context(), userReq("y")); err == nil {
		t.Fatal("no error")
	}
	if f.requests("a") == ra || f.requests("b") == rb {
		t.Error("with every model cooling down, not every model was tried")
	}
	// b's endpoint answered (a refusal): the chain reaches a provider.
	if st := chain.State(); !st.Known || !st.Reachable {
		t.Errorf("chain state %+v, want reachable", st)
	}
	f.srv["b"].SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Status(502, "") })
	f.clock.Advance(time.Hour)
	if _, err := chain.Chat(t.Context(), userReq("z")); err == nil {
		t.Fatal("no error")
	}
	if st := chain.State(); !st.Known || st.Reachable {
		t.Errorf("chain state %+v, want unreachable: no endpoint answered", st)
	}
}

// A chain of one model is that model: its error as it is, no switch lines.
func TestChainOfOneIsItsModel(t *testing.T) {
	f := newFleet(t, nil, "only")
	f.srv["only"].Push(llmtest.Status(404, ""))
	chain := f.chain(llm.PurposeChat, "only")
	_, err := chain.Chat(t.Context(), userReq("x"))
	var le *llm.Error
	if !errors.As(err, &le) || le.Status != 404 {
		t.Fatalf("err = %v", err)
	}
	var ce *llm.ChainError
	if errors.As(err, &ce) {
		t.Error("a chain of one wraps its model's error")
	}
	if n := len(f.logs.Records()); n != 0 {
		t.Errorf("a chain of one logged %v", f.logs.Records())
	}
	if chain.State() != f.model["only"].Client().State() {
		t.Error("a chain of one has another state than its model")
	}
	if resp, err := chain.Chat(t.Context(), userReq("y")); err != nil || resp.Content != "ok" {
		t.Fatalf("the only model, cooling down, was not tried: %q %v", resp.Content, err)
	}
}

// Each purpose reaches the models its chain names, seen in each fake's
// request log; the usage is summed over the models by purpose.
func TestRouterSendsEachPurposeToItsChain(t *testing.T) {
	f := newFleet(t, nil, "hosted", "backup", "local")
	for name, s := range f.srv {
		s.SetResponder(func(llmtest.Request) llmtest.Reply {
			return llmtest.Reply{Text: name, Usage: &llm.Usage{PromptTokens: 10, CompletionTokens: 1}}
		})
	}
	r := llm.NewRouter(
		f.chain(llm.PurposeChat, "hosted", "backup", "local"),
		f.chain(llm.PurposeArchive, "local", "backup"),
		f.chain(llm.PurposeDreamAnalysis, "backup", "local"),
		f.chain(llm.PurposeDreamEdit, "backup", "local"),
	)
	for purpose, want := range map[string]string{
		"": "hosted", llm.PurposeChat: "hosted", llm.PurposeArchive: "local",
		llm.PurposeDreamAnalysis: "backup", llm.PurposeDreamEdit: "backup",
	} {
		resp, err := r.Chat(t.Context(), llm.Request{Purpose: purpose, Messages: userReq("x").Messages})
		if err != nil || resp.Content != want {
			t.Errorf("purpose %q answered by %q (%v), want %s", purpose, resp.Content, err, want)
		}
	}
	for name, want := range map[string]int{"hosted": 2, "local": 1, "backup": 2} {
		reqs := f.srv[name].Requests()
		if len(reqs) != want {
			t.Errorf("%s saw %d requests, want %d", name, len(reqs), want)
		}
		for _, q := range reqs {
			if q.Model != name+"-id" {
				t.Errorf("%s was asked for model %q", name, q.Model)
			}
		}
	}
	u := r.Usage()
	if u[llm.PurposeChat].Calls != 2 || u[llm.PurposeDreamEdit].PromptTokens != 10 || u[llm.PurposeArchive].Calls != 1 {
		t.Errorf("usage %+v", u)
	}
	if got := len(r.Models()); got != 3 {
		t.Errorf("%d models, want each of the three once", got)
	}
	if r.Chain("unknown-purpose") != r.Chains()[0] {
		t.Error("a purpose without a chain does not go to the chat chain")
	}
}

// BenchmarkChainChat is what a chain adds to a call through the client:
// "client" calls it directly, "chain-of-one" is the one-model config,
// "past-a-cooling-model" passes over a first model that cools down.
func BenchmarkChainChat(b *testing.B) {
	for _, bc := range []string{"client", "chain-of-one", "past-a-cooling-model"} {
		b.Run(bc, func(b *testing.B) {
			ok, down := llmtest.New(b), llmtest.New(b)
			ok.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("Hello there, world") })
			down.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Status(503, "") })
			serving := llm.NewNamed("ok", newClient(b, ok.URL(), nil))
			var m interface {
				Chat(context.Context, llm.Request) (llm.Response, error)
			}
			switch bc {
			case "client":
				m = serving.Client()
			case "chain-of-one":
				m = llm.NewChain(llm.PurposeChat, []*llm.Named{serving}, nil)
			default:
				failing := llm.NewNamed("down", newClient(b, down.URL(), func(c *llm.Config) { c.MaxTries = 1 }))
				chain := llm.NewChain(llm.PurposeChat, []*llm.Named{failing, serving}, nil)
				if _, err := chain.Chat(b.Context(), userReq("cool it down")); err != nil {
					b.Fatal(err)
				}
				m = chain
			}
			req := userReq("hi")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := m.Chat(b.Context(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// One record of a failing model: what a call with nowhere else to go is
// told (the breaker's "next try in") and what the chains show and pass it
// over by (its cooldown, doubled at each failure in a row) are one time.
func TestOneRecordOfAFailingModel(t *testing.T) {
	f := newFleet(t, func(_ string, c *llm.Config) {
		c.MaxTries = 1
		c.BreakerThreshold = 2
	}, "only")
	f.srv["only"].SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Status(503, "") })
	chain := f.chain(llm.PurposeChat, "only")
	call := func() error {
		t.Helper()
		_, err := chain.Chat(t.Context(), userReq("x"))
		if err == nil {
			t.Fatal("no error")
		}
		return err
	}
	agree := func(step string, wantIn time.Duration) {
		t.Helper()
		err := call()
		want := fmt.Sprintf("next try in %ds", int(wantIn/time.Second))
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%s: the fast failure %q does not say %q", step, err, want)
		}
		st := chain.Status().Models[0]
		if got := st.CoolingUntil.Sub(f.clock.Now()); got != wantIn || !st.BreakerOpen || !f.model["only"].Cooling() {
			t.Errorf("%s: status says tried again in %v (breaker open %v), want %v", step, got, st.BreakerOpen, wantIn)
		}
	}
	call() // cools it down for 30s
	call() // with no other model it is tried anyway: the breaker opens
	if n := f.requests("only"); n != 2 {
		t.Fatalf("%d requests, want 2", n)
	}
	agree("open", 30*time.Second)
	f.clock.Advance(31 * time.Second)
	call() // the trial fails: twice as long
	agree("after a failed trial", 60*time.Second)
	if n := f.requests("only"); n != 3 {
		t.Errorf("%d requests, want 3 (fast failures send none)", n)
	}
}
