package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/eval"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/llm"
	workspacetemplate "github.com/dreamgate/dreamgate/workspace-template"
)

// maxDreamRuns bounds the Dream runs that empty one scenario's backlog: a
// run reads one batch, and a batch that keeps failing is skipped after its
// third failure.
const maxDreamRuns = 30

// cmdEval is `dreamgate eval`: it plays scripted conversations through the
// real pipeline against the configured model, in throw-away directories,
// and reports how much of them the memory kept.
func cmdEval(ctx context.Context, e *env, args []string) error {
	fs := e.flags("eval")
	scenarioPath := fs.String("scenario", "", "scenario file or directory (default: the built-in scenarios)")
	runs := fs.Int("runs", 1, "play every scenario this many times and report the spread")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	keep := fs.Bool("keep", false, "keep the throw-away workspaces and name their directory on stderr")
	chatModel := fs.String("chat-model", "", "the model (a name in models, or llm) that answers chat turns instead of use.chat")
	archiveModel := fs.String("archive-model", "", "the model that writes the archive instead of use.archive")
	dreamModel := fs.String("dream-model", "", "the model of Dream's analysis and edits instead of use.dream")
	if err := e.parse(fs, args, 0); err != nil {
		return err
	}
	if *runs < 1 {
		return &exitError{code: 2, err: errors.New("dreamgate eval: --runs must be at least 1")}
	}
	scs, err := evalScenarios(ctx, *scenarioPath)
	if err != nil {
		return err
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	logger := e.logger(slog.LevelError)
	if err := evalModels(&cfg, *chatModel, *archiveModel, *dreamModel); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("dreamgate eval: %w", err)}
	}

	root, err := os.MkdirTemp("", "dreamgate-eval-")
	if err != nil {
		return fmt.Errorf("create a directory for the eval: %w", err)
	}
	if *keep {
		fmt.Fprintf(e.stderr, "eval: workspaces are kept in %s\n", root)
	} else {
		defer os.RemoveAll(root)
	}

	if err := evalModelsAnswer(ctx, cfg, logger); err != nil {
		return err
	}

	if cfg.severalModels() {
		fmt.Fprintf(e.stderr, "eval: %d scenario(s), %d run(s), models %s\n", len(scs), *runs, modelsLine(cfg))
	} else {
		fmt.Fprintf(e.stderr, "eval: %d scenario(s), %d run(s), model %s at %s\n", len(scs), *runs, cfg.LLM.Model, llm.RedactURL(cfg.LLM.BaseURL))
	}
	p := &pipeline{base: cfg, root: root, logger: logger}
	rep := eval.Run(ctx, scs, p, eval.Options{Runs: *runs, Progress: e.stderr})
	if *asJSON {
		err = rep.WriteJSON(e.stdout)
	} else {
		err = rep.WriteTable(e.stdout)
	}
	if err != nil {
		return fmt.Errorf("write the report: %w", err)
	}
	if ctx.Err() != nil {
		return &exitError{code: 1, err: errors.New("dreamgate eval: interrupted; the report covers what ran")}
	}
	if !rep.Passed {
		return &exitError{code: 1, err: errors.New("")}
	}
	return nil
}

// evalScenarios reads the scenarios to play: the built-in ones, or a file
// or directory of them, their seeds checked.
func evalScenarios(ctx context.Context, path string) ([]eval.Scenario, error) {
	var scs []eval.Scenario
	var err error
	if path == "" {
		scs, err = eval.Builtin()
	} else {
		scs, err = eval.Load(ctx, path)
	}
	if err == nil {
		err = checkSeeds(scs)
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, &exitError{code: 1, err: errors.New("dreamgate eval: interrupted while reading the scenario")}
		}
		return nil, &exitError{code: 2, err: fmt.Errorf("dreamgate eval: bad scenario: %w", err)}
	}
	return scs, nil
}

// evalModelsAnswer is one quick look before any scenario: with no model at
// an endpoint every scenario would spend minutes in retries to say the same
// thing. Each purpose needs one model that answers.
func evalModelsAnswer(ctx context.Context, cfg Config, logger *slog.Logger) error {
	specs, chains := cfg.modelSpecs(), cfg.chains()
	down := map[string]error{}
	for _, p := range purposes {
		var last error
		for _, name := range chains[p.purpose] {
			if err, seen := down[name]; seen {
				last = err
			} else {
				s := specs[name]
				c := s.cfg
				c.Logger = logger
				pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := llm.New(c).Ping(pctx)
				cancel()
				if err == nil || !errors.Is(err, llm.ErrUnavailable) {
					err = nil
				}
				down[name], last = err, err
			}
			if last == nil {
				break
			}
		}
		if last != nil {
			name := chains[p.purpose][len(chains[p.purpose])-1]
			for_ := ""
			if cfg.severalModels() {
				for_ = ", for " + p.purpose
			}
			return &exitError{code: 1, err: fmt.Errorf("dreamgate eval: %s (model %s at %s%s)", llm.UserMessage(last), specs[name].cfg.Model, llm.RedactURL(specs[name].cfg.BaseURL), for_)}
		}
	}
	return nil
}

// pipeline plays scenarios through the app exactly as `gateway` and `chat`
// build it, each scenario on its own workspace and state directory under
// root.
type pipeline struct {
	base   Config
	root   string
	logger *slog.Logger
	n      int
}

// Play implements eval.Player.
func (p *pipeline) Play(ctx context.Context, sc eval.Scenario) (eval.Outcome, error) {
	var out eval.Outcome
	p.n++
	dir := filepath.Join(p.root, strconv.Itoa(p.n)+"-"+safeName(sc.Name))
	cfg := p.base
	cfg.Workspace = filepath.Join(dir, "workspace")
	cfg.StateDir = filepath.Join(dir, "state")
	// A scenario's memory is its throw-away workspace's files, whatever
	// the config keeps its own program state in: scenarios never share a
	// database's archive or memory repository.
	cfg.Store.Postgres = ""
	cfg.Admins = nil
	// The idle timer is played by the scenario's idle turns, not by the
	// clock.
	cfg.Agent.IdleCompactAfterMinutes = 0
	if sc.ContextWindow > 0 {
		cfg.LLM.ContextWindow = sc.ContextWindow
		cfg.LLM.MaxTokens = min(cfg.LLM.MaxTokens, sc.ContextWindow/8)
		// The scenario's window is every model's: it plays a small one.
		cfg.Models = maps.Clone(cfg.Models)
		for name, m := range cfg.Models {
			m.ContextWindow = sc.ContextWindow
			m.MaxTokens = min(max(m.MaxTokens, cfg.LLM.MaxTokens), sc.ContextWindow/8)
			cfg.Models[name] = m
		}
	}
	if err := seedFiles(cfg.Workspace, sc.Files); err != nil {
		return out, err
	}
	a, err := newApp(cfg, p.logger)
	if err != nil {
		return out, fmt.Errorf("set up the scenario's workspace: %w", err)
	}
	defer a.close()

	for i, s := range sc.Sessions {
		if err := p.playSession(ctx, a, s, &out); err != nil {
			return out, fmt.Errorf("session %d (%s): %w", i+1, s.Key, err)
		}
	}
	p.dream(ctx, a, &out)
	if out.Files, err = memoryFiles(cfg.Workspace); err != nil {
		return out, err
	}
	if err := p.ask(ctx, a, sc.Questions, &out); err != nil {
		return out, err
	}
	out.Usage = usageByPurpose(a.model.Usage())
	return out, ctx.Err()
}

// playSession plays one session's turns through a gateway of its own, then
// archives it with /new. The gateway's shutdown waits for that background
// archive, so the next session starts after it is in the history, as it
// would when people talk minutes apart.
func (p *pipeline) playSession(ctx context.Context, a *app, s eval.Session, out *eval.Outcome) error {
	g, _ := a.gateway(false)
	g.AddChannel(sink{name: s.Channel()})
	cons := a.consolidator(a.limited())
	defer func() {
		sctx, cancel := shutdownContext()
		defer cancel()
		_ = g.Shutdown(sctx)
	}()
	for i, t := range s.Turns {
		res, err := submit(ctx, g, s, t.Text)
		if err != nil {
			return err
		}
		if res.Err != nil {
			out.Problems = append(out.Problems, fmt.Sprintf("session %s turn %d failed: %s", s.Key, i+1, res.Reply))
		}
		if t.Idle {
			// What the idle timer runs once the conversation goes quiet:
			// the session's unarchived tail goes to the history, the
			// session goes on.
			sess, err := a.sessions.Get(s.SessionKey())
			if err != nil {
				return fmt.Errorf("open session: %w", err)
			}
			if _, err := cons.ArchiveTail(ctx, sess); err != nil {
				out.Problems = append(out.Problems, fmt.Sprintf("session %s: the idle archive after turn %d failed", s.Key, i+1))
				p.logger.Error("eval idle archive failed", "session", s.SessionKey(), "err", err)
			}
		}
	}
	if _, err := submit(ctx, g, s, "/new"); err != nil {
		return err
	}
	return nil
}

// submit sends one message through the gateway's real path and waits for
// its result. A session without an audience is the operator's: its memory
// is the workspace root's files.
func submit(ctx context.Context, g *gateway.Gateway, s eval.Session, text string) (gateway.Result, error) {
	a := eval.Of(s.Audience)
	sender := s.Sender
	if a.Kind == audience.Person {
		sender = a.Person // a DM's sender is its person
	}
	done, err := g.Submit(ctx, channels.Inbound{
		Channel: s.Channel(), ChatID: s.Key, SessionKey: s.SessionKey(),
		SenderID: sender, SenderName: s.Sender, Text: text, Audience: a,
	})
	if err != nil {
		return gateway.Result{}, fmt.Errorf("submit a turn: %w", err)
	}
	select {
	case r := <-done:
		return r, nil
	case <-ctx.Done():
		return gateway.Result{}, ctx.Err()
	}
}

// dream runs Dream until the history it has not read is empty, as the
// schedule would over the following hours.
func (p *pipeline) dream(ctx context.Context, a *app, out *eval.Outcome) {
	d, err := a.dreamer()
	if err != nil {
		out.Problems = append(out.Problems, "Dream could not start: the memory repository could not be opened")
		p.logger.Error("eval dream unavailable", "err", err)
		return
	}
	failures := 0
	for range maxDreamRuns {
		rep, err := d.Run(ctx, "eval", dream.AllScopes(), nil)
		if rep.Outcome == dream.OutcomeNothingNew || ctx.Err() != nil {
			return
		}
		if err != nil {
			failures++
			reason := rep.Reason
			if reason == "" {
				reason = "it did not run"
			}
			out.Problems = append(out.Problems, "a Dream run failed: "+reason)
			var busy *dream.BusyError
			if errors.As(err, &busy) || failures >= maxDreamRuns/2 {
				return
			}
		}
	}
	out.Problems = append(out.Problems, fmt.Sprintf("Dream still had history to read after %d runs", maxDreamRuns))
}

// memoryFiles reads the memory files of the workspace root and of every
// scope folder (workspace-relative path -> text; a missing file is "").
func memoryFiles(ws string) (map[string]string, error) {
	dirs := []string{""}
	entries, err := os.ReadDir(filepath.Join(ws, audience.ScopesDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("list the memory scopes: %w", err)
	}
	for _, e := range entries {
		if s, err := audience.ParseScope(e.Name()); err == nil && e.IsDir() {
			dirs = append(dirs, s.Dir())
		}
	}
	out := map[string]string{}
	for _, d := range dirs {
		for _, f := range eval.MemoryFiles {
			rel := path.Join(d, f)
			b, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(rel)))
			if err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("read %s: %w", rel, err)
			}
			out[rel] = string(b)
		}
	}
	return out, nil
}

// ask puts each question to the assistant in a fresh session of its
// audience, so it can only know what that audience's memory files say.
func (p *pipeline) ask(ctx context.Context, a *app, qs []eval.Question, out *eval.Outcome) error {
	if len(qs) == 0 {
		return nil
	}
	g, _ := a.gateway(false)
	g.AddChannel(sink{name: "eval"})
	defer func() {
		sctx, cancel := shutdownContext()
		defer cancel()
		_ = g.Shutdown(sctx)
	}()
	for i, q := range qs {
		s := eval.Session{Key: "question-" + strconv.Itoa(i+1), Sender: "user", Audience: q.Audience}
		res, err := submit(ctx, g, s, q.Ask)
		if err != nil {
			return err
		}
		if res.Err != nil {
			out.Problems = append(out.Problems, fmt.Sprintf("question %d failed: %s", i+1, res.Reply))
			res.Reply = ""
		}
		out.Answers = append(out.Answers, res.Reply)
	}
	return nil
}

// usageByPurpose folds the client's usage buckets into the report's.
func usageByPurpose(u map[string]llm.Usage) map[string]eval.Tokens {
	out := map[string]eval.Tokens{}
	for purpose, v := range u {
		key := eval.PurposeChat
		switch purpose {
		case llm.PurposeArchive:
			key = eval.PurposeArchive
		case llm.PurposeDreamAnalysis, llm.PurposeDreamEdit:
			key = eval.PurposeDream
		}
		out[key] = out[key].Add(eval.Tokens{Prompt: v.PromptTokens, Completion: v.CompletionTokens, Cached: v.CachedTokens, Calls: v.Calls})
	}
	return out
}

// checkSeeds refuses, before anything runs, a seeded file the workspace
// template needs as a folder ("prompts"), or one inside a template file
// ("SOUL.md/notes"): the workspace could not be set up around it.
func checkSeeds(scs []eval.Scenario) error {
	tmpl := workspacetemplate.FS()
	for _, sc := range scs {
		for _, rel := range slices.Sorted(maps.Keys(sc.Files)) {
			bad := ""
			if fi, err := fs.Stat(tmpl, rel); err == nil && fi.IsDir() {
				bad = "is a folder of the workspace template"
			}
			for dir := path.Dir(rel); dir != "." && bad == ""; dir = path.Dir(dir) {
				if fi, err := fs.Stat(tmpl, dir); err == nil && !fi.IsDir() {
					bad = fmt.Sprintf("is inside %q, a file of the workspace template", dir)
				}
			}
			if bad != "" {
				return &eval.ScenarioError{File: sc.Source, Scenario: sc.Name, Field: fmt.Sprintf("files[%q]", rel), Msg: bad}
			}
		}
	}
	return nil
}

// seedFiles writes a scenario's files into the workspace before it is set
// up; the template fills in what they leave out.
func seedFiles(ws string, files map[string]string) error {
	for rel, text := range files {
		path := filepath.Join(ws, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("seed %s: %w", rel, err)
		}
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			return fmt.Errorf("seed %s: %w", rel, err)
		}
	}
	return nil
}

// safeName keeps letters, digits and dashes of a scenario name for a
// directory name.
func safeName(name string) string {
	b := []rune{}
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			b = append(b, r)
		default:
			b = append(b, '_')
		}
		if len(b) == 40 {
			break
		}
	}
	return string(b)
}

// sink is the channel the eval's turns arrive on: replies are read from the
// gateway's Result, so what it is sent is dropped.
type sink struct{ name string }

func (s sink) Name() string                                   { return s.name }
func (s sink) Run(ctx context.Context, _ channels.Sink) error { <-ctx.Done(); return nil }
func (s sink) Send(context.Context, channels.Outbound) error  { return nil }

// evalModels points purposes at the models the flags name, one model each
// and no fallback, so that a run compares exactly those models.
func evalModels(cfg *Config, chat, archive, dreamModel string) error {
	if chat == "" && archive == "" && dreamModel == "" {
		return nil
	}
	for _, f := range []struct{ flag, name string }{{"--chat-model", chat}, {"--archive-model", archive}, {"--dream-model", dreamModel}} {
		if f.name == "" {
			continue
		}
		if _, ok := cfg.Models[f.name]; !ok && f.name != llmModelName {
			return fmt.Errorf("%s: no model is named %q; models has %s", f.flag, f.name, modelNames(slices.Sorted(maps.Keys(cfg.Models))))
		}
	}
	if cfg.Dream.Model != "" && dreamModel == "" {
		return errors.New("dream.model is set: name Dream's model with --dream-model (a name in models, or llm) to compare models")
	}
	cfg.Dream.Model = ""
	// Archive and Dream default to the chat chain: each purpose keeps
	// what the config gave it unless its own flag changes it.
	was := cfg.chains()
	cfg.Use = UseConfig{Chat: was[llm.PurposeChat], Archive: was[llm.PurposeArchive],
		DreamAnalysis: was[llm.PurposeDreamAnalysis], DreamEdit: was[llm.PurposeDreamEdit]}
	if chat != "" {
		cfg.Use.Chat = ModelList{chat}
	}
	if archive != "" {
		cfg.Use.Archive = ModelList{archive}
	}
	if dreamModel != "" {
		cfg.Use.DreamAnalysis, cfg.Use.DreamEdit = ModelList{dreamModel}, ModelList{dreamModel}
	}
	return nil
}
