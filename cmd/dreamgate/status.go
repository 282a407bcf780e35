package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/memory"
)

// cmdStatus prints config, workspace, channels, provider reachability and
// Dream times, without calling a model. It exits 1 when the model cannot
// be used (unreachable, its key refused, or GET /models answering other
// than 2xx, as a wrong baseURL does), so scripts can wait on it. When a
// gateway runs with this state directory, it answers (through its admin
// socket): its channels as they are, its model with its key.
func cmdStatus(ctx context.Context, e *env, args []string) error {
	scope, err := parseStatus(e, args)
	if err != nil {
		return err
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	if asked, err := e.viaGateway(ctx, cfg, "status", args); asked {
		return err
	}
	logger := e.logger(slog.LevelWarn)
	// status reads: a workspace not set up yet is not created here.
	setUp, err := workspaceSetUp(cfg)
	if err != nil {
		return err
	}
	op := operatorParts{cfg: cfg}
	if setUp {
		a, err := newApp(cfg, logger)
		if err != nil {
			return err
		}
		defer a.close()
		op = a.parts(nil)
	}
	return writeStatus(ctx, e.stdout, op, scope, logger)
}

func parseStatus(e *env, args []string) (*scopeChoice, error) {
	fs := e.flags("status")
	scope := scopeFlag(fs)
	return scope, e.parse(fs, args, 0)
}

// adminStatus is `status` asked of the running gateway.
func adminStatus(ctx context.Context, e *env, p *gatewayProcess, args []string) error {
	scope, err := parseStatus(e, args)
	if err != nil {
		return err
	}
	return writeStatus(ctx, e.stdout, p.parts(), scope, p.logger)
}

// writeStatus writes the status of op's workspace; op.a is nil before the
// workspace is set up.
func writeStatus(ctx context.Context, w io.Writer, op operatorParts, scope *scopeChoice, logger *slog.Logger) error {
	cfg := op.cfg
	statusWhere(w, op)
	unusable := statusModels(ctx, w, op, logger)
	statusMemory(w, op, scope)
	if cfg.Dream.Enabled {
		statusDream(w, op, scope)
	} else {
		fmt.Fprintln(w, "Dream: off")
	}
	statusProcesses(w, op)
	if !unusable {
		return nil
	}
	msg := "dreamgate: the model cannot be used; see the Model line above"
	if cfg.severalModels() {
		msg = "dreamgate: a purpose has no model that can be used; see the Models lines above"
	}
	return &exitError{code: 1, err: errors.New(msg)}
}

// statusWhere: the config, the gateway, the folders, the channels and the
// MCP servers.
func statusWhere(w io.Writer, op operatorParts) {
	cfg := op.cfg
	if cfg.path == "" {
		fmt.Fprintln(w, "Config: none (defaults); `dreamgate onboard` writes one")
	} else {
		fmt.Fprintf(w, "Config: %s\n", cfg.path)
	}
	if op.live != nil {
		fmt.Fprintf(w, "Gateway: running (pid %d since %s), answering through %s\n",
			os.Getpid(), op.live.started.Format("2006-01-02 15:04"), adminSocketPath(cfg.StateDir))
	} else {
		fmt.Fprintf(w, "Gateway: none answers on %s\n", adminSocketPath(cfg.StateDir))
	}
	if op.a != nil {
		fmt.Fprintf(w, "Workspace: %s\n", cfg.Workspace)
	} else {
		fmt.Fprintf(w, "Workspace: %s (not created yet: `dreamgate onboard` or the first chat creates it)\n", cfg.Workspace)
	}
	fmt.Fprintf(w, "State: %s (sessions in %s)\n", cfg.StateDir, filepath.Join(cfg.StateDir, "sessions"))
	var live map[string]channels.Health
	if op.live != nil {
		live = op.live.health.report().Channels
	}
	for _, line := range channelLines(cfg, live) {
		fmt.Fprintln(w, line)
	}
	for _, line := range mcpLines(cfg.Tools) {
		fmt.Fprintln(w, line)
	}
}

// statusModels pings the model (each model, when the config names several)
// and reports whether the model cannot be used.
func statusModels(ctx context.Context, w io.Writer, op operatorParts, logger *slog.Logger) (unusable bool) {
	cfg := op.cfg
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	models := newModels(cfg, logger)
	if op.a != nil {
		models = op.a.model
	}
	if cfg.severalModels() {
		return modelsStatus(pctx, w, cfg, models, op.live != nil)
	}
	perr := models.Models()[0].Client().Ping(pctx)
	if perr != nil {
		fmt.Fprintf(w, "Model: %s at %s — %s\n", cfg.LLM.Model, llm.RedactURL(cfg.LLM.BaseURL), llm.UserMessage(perr))
	} else {
		fmt.Fprintf(w, "Model: %s at %s — reachable\n", cfg.LLM.Model, llm.RedactURL(cfg.LLM.BaseURL))
	}
	return modelUnusable(perr)
}

// statusMemory: the archive, how far Dream has read it, and the scopes.
func statusMemory(w io.Writer, op operatorParts, scope *scopeChoice) {
	a := op.a
	if a == nil {
		fmt.Fprintln(w, "History: none yet")
		return
	}
	if n, err := a.history.Len(); err == nil {
		dc, _ := op.ledger().Cursor(scope.scope)
		last, _ := a.history.LastCursor()
		noun := "entries"
		if n == 1 {
			noun = "entry"
		}
		whose := ""
		if scope.one {
			whose = " of the " + scope.name() + " scope"
		}
		fmt.Fprintf(w, "History: %d %s, last cursor %d, Dream has read%s up to %d\n", n, noun, last, whose, dc)
	}
	if !scope.one {
		fmt.Fprintln(w, scopesLine(a.mem))
	}
}

// statusDream: the last Dream commit and the next scheduled Dream.
func statusDream(w io.Writer, op operatorParts, scope *scopeChoice) {
	cfg := op.cfg
	var damaged *gitstore.DamagedError
	if op.a == nil {
		fmt.Fprintln(w, "Last Dream commit: none yet")
	} else if repo, err := op.a.openRepo(); errors.As(err, &damaged) {
		fmt.Fprintf(w, "Dream: stopped: %v.\n", damaged)
	} else if err != nil {
		fmt.Fprintf(w, "Dream: memory repository unavailable (%v)\n", err)
	} else if cs, err := repo.Log(1, dream.SubjectPrefix, scope.keep()); err == nil && len(cs) > 0 {
		undone := ""
		if r, ok, err := repo.UndoneBy(cs[0].SHA, scope.keep()); err == nil && ok {
			// A restore since: the memory no longer holds this change.
			undone = fmt.Sprintf(" (undone by %s %s)", r.Short, r.When.Format("2006-01-02 15:04"))
		}
		fmt.Fprintf(w, "Last Dream commit: %s %s %s%s\n", cs[0].Short, cs[0].When.Format("2006-01-02 15:04"), cs[0].Subject, undone)
	} else {
		fmt.Fprintln(w, "Last Dream commit: none yet")
	}
	if sched, err := dream.ParseSchedule(cfg.Dream.Cron, cfg.Dream.Timezone); err == nil {
		fmt.Fprintf(w, "Next Dream: %s (cron %q, %s) when the gateway runs\n",
			sched.Next(time.Now()).Format("2006-01-02 15:04 MST"), cfg.Dream.Cron, cfg.Dream.Timezone)
	}
}

// scopesLine says how memory is kept: shared, or per audience with the
// scope folders the workspace holds (their names, up to ten).
func scopesLine(mem *memory.Memory) string {
	if mem.Shared() {
		return "Memory: shared by every conversation (memory.scoped is false)"
	}
	all, err := mem.Scopes()
	if err != nil {
		return "Memory scopes: unreadable (" + err.Error() + ")"
	}
	scopes := all[1:] // after the default scope
	if len(scopes) == 0 {
		return "Memory scopes: default (the workspace root's files) only so far"
	}
	names := make([]string, 0, min(len(scopes), 10))
	for _, s := range scopes[:min(len(scopes), 10)] {
		names = append(names, string(s))
	}
	more := ""
	if len(scopes) > 10 {
		more = fmt.Sprintf(", and %d more", len(scopes)-10)
	}
	return fmt.Sprintf("Memory scopes: default and %d more (%s%s); --scope NAME shows one", len(scopes), strings.Join(names, ", "), more)
}

// modelUnusable: nothing answered, or GET /models answered other than 2xx
// (a refused key, a wrong baseURL answering 404). A 2xx that is not a
// model list we can read still proves the endpoint there.
func modelUnusable(err error) bool {
	var le *llm.Error
	switch {
	case err == nil:
		return false
	case errors.As(err, &le) && errors.Is(le.Kind, llm.ErrMalformed):
		return le.Status != 0 && (le.Status < 200 || le.Status > 299)
	default:
		return true
	}
}

// channelLines says, per channel, whether it runs and whether its tokens
// are there, never what they are; with live (the running gateway's
// channels), how each is doing.
func channelLines(cfg Config, live map[string]channels.Health) []string {
	token := func(field, label, v string) string {
		switch {
		case strings.TrimSpace(v) == "":
			return label + " missing"
		case cfg.fromEnv[field] != "":
			return label + " set (from " + cfg.fromEnv[field] + ")"
		default:
			return label + " set"
		}
	}
	// Tokens in the environment do not turn a channel on by themselves.
	off := func(name string, fields ...string) string {
		for _, f := range fields {
			if v := cfg.fromEnv[f]; v != "" {
				return fmt.Sprintf("Channel %s: off (%s is set, but channels.%s.enabled is false)", name, v, name)
			}
		}
		return "Channel " + name + ": off"
	}
	state := func(name string) string {
		if h, ok := live[name]; ok {
			if h.Detail != "" {
				return fmt.Sprintf(" — %s (%s)", h.State, h.Detail)
			}
			return " — " + h.State
		}
		return ""
	}
	var out []string
	if cfg.Channels.Terminal.Enabled {
		out = append(out, "Channel terminal: enabled (runs when stdin is a terminal, or with gateway --terminal)"+state("terminal"))
	} else {
		out = append(out, "Channel terminal: off")
	}
	if s := cfg.Channels.Slack; s.Enabled {
		out = append(out, fmt.Sprintf("Channel slack: enabled, %s, %s%s",
			token("channels.slack.botToken", "bot token", s.BotToken), token("channels.slack.appToken", "app token", s.AppToken), state("slack")))
	} else {
		out = append(out, off("slack", "channels.slack.botToken", "channels.slack.appToken"))
	}
	if d := cfg.Channels.Discord; d.Enabled {
		out = append(out, fmt.Sprintf("Channel discord: enabled, %s%s", token("channels.discord.token", "token", d.Token), state("discord")))
	} else {
		out = append(out, off("discord", "channels.discord.token"))
	}
	return out
}

// mcpLines lists tools.mcpServers: name, transport, whether it is on and
// for whom. Never the command, URL, headers or env: any may carry a secret.
func mcpLines(t ToolsConfig) []string {
	if len(t.MCPServers) == 0 {
		return []string{"MCP servers: none"}
	}
	names := make([]string, 0, len(t.MCPServers))
	for name := range t.MCPServers {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]string, 0, len(names))
	for _, name := range names {
		s := t.MCPServers[name]
		transport := "stdio"
		if strings.TrimSpace(s.URL) != "" {
			transport = "http"
		}
		line := fmt.Sprintf("MCP server %s: %s, ", name, transport)
		if s.enabled() {
			line += "enabled, " + s.whoMayUse()
		} else {
			line += fmt.Sprintf("off (tools.mcpServers.%s.enabled is false)", name)
		}
		out = append(out, line)
	}
	return out
}
