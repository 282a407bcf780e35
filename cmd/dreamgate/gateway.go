package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/discord"
	"github.com/dreamgate/dreamgate/channels/slack"
	"github.com/dreamgate/dreamgate/channels/terminal"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/gitstore"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/metrics"
	"github.com/dreamgate/dreamgate/store/postgres"
)

// cmdGateway runs every enabled channel, the Dream scheduler, /healthz and
// /metrics until SIGINT or SIGTERM, or until the person at the terminal chat leaves
// (Ctrl-D or /quit).
func cmdGateway(ctx context.Context, e *env, args []string) error {
	fs := e.flags("gateway")
	forceTerminal := fs.Bool("terminal", false, "run the terminal chat even when stdin is not a terminal")
	if err := e.parse(fs, args, 0); err != nil {
		return err
	}
	cfg, err := e.gatewayConfig()
	if err != nil {
		return err
	}
	// Under systemd or in a container stdin is not a person: the terminal
	// chat would read EOF at once and show as stopped in /healthz. It runs
	// at a terminal, or where asked for with --terminal.
	p := &gatewayProcess{e: e, cfg: cfg, health: &healthState{}, started: time.Now()}
	p.withTerminal = cfg.Channels.Terminal.Enabled && (e.stdinIsTTY() || *forceTerminal)
	p.interactive = p.withTerminal && e.stdinIsTTY()
	closeLog, err := p.openLog()
	if err != nil {
		return err
	}
	defer closeLog()

	// /healthz answers first, before anything slow, so supervisors see the
	// process alive at once; it reports "starting" until the channels run.
	stopHealth, err := p.startHealth()
	if err != nil {
		return err
	}
	defer stopHealth()
	if p.a, err = newApp(cfg, p.logger); err != nil {
		return err
	}
	defer p.a.close()
	defer p.leave()
	if err := p.build(); err != nil {
		return err
	}

	stopServing, err := p.serve()
	defer stopServing()
	if err != nil {
		return err
	}
	return p.run(ctx)
}

// gatewayProcess is one `dreamgate gateway`: its parts, built in order and
// stopped in reverse.
type gatewayProcess struct {
	e                         *env
	cfg                       Config
	logger                    *slog.Logger
	logPath                   string // the log file, when the chat owns the terminal
	withTerminal, interactive bool
	started                   time.Time

	health    *healthState
	healthURL string
	a         *app
	g         *gateway.Gateway
	dreamer   *dream.Dreamer // nil when Dream is off or unavailable
	term      *terminal.Adapter
	names     webNames // the chat platforms, which name people and channels
	ledger    *dream.Ledger
	sched     *dream.Scheduler
	page      *webPage
	proc      *postgres.Process // one of the database's processes (processes.go)
}

// openLog chooses where the log goes. With the chat at a terminal, log
// lines would land in the middle of what the person reads and types: they
// go to a file instead, unless stderr is redirected anyway.
func (p *gatewayProcess) openLog() (closeLog func(), err error) {
	if !p.interactive || !p.e.isTTY(p.e.stderr) {
		p.logger = p.e.logger(slog.LevelInfo)
		return func() {}, nil
	}
	p.logPath = filepath.Join(p.cfg.StateDir, "gateway.log")
	f, err := openLogFile(p.logPath)
	if err != nil {
		return nil, err
	}
	p.logger = fileLogger(f, p.e.getenv)
	return func() { f.Close() }, nil
}

// startHealth serves /healthz, /readyz and /metrics on gateway.healthAddr.
func (p *gatewayProcess) startHealth() (stop func(), err error) {
	addr := p.cfg.Gateway.HealthAddr
	if addr == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("gateway.healthAddr %s: %w", addr, err)
	}
	srv := &http.Server{Handler: p.health.handler(), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			p.logger.Error("health server stopped", "err", err)
		}
	}()
	p.healthURL = "http://" + ln.Addr().String() + "/healthz"
	p.logger.Info("health endpoint listening", "addr", ln.Addr().String())
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}

// build makes the gateway and its channels from the app.
func (p *gatewayProcess) build() error {
	cfg, a, logger := p.cfg, p.a, p.logger
	if cfg.Gateway.HealthAddr != "" {
		a.metrics = metrics.New()
	}
	p.g, p.dreamer = a.gateway(cfg.Dream.Enabled)
	if p.dreamer != nil {
		// A Dream killed with the last process left edits uncommitted:
		// record them now rather than at the next scheduled run.
		if err := p.dreamer.Recover(); err != nil {
			logger.Warn("dream could not finish an interrupted run at start; the next Dream tries again", "err", err)
		}
	}
	// Accepted messages not yet in their session, for the next start to
	// answer after a crash; only the process that owns the channels keeps it.
	if cfg.Gateway.AnswerPendingMinutes > 0 || a.db != nil { // the database's inbox is shared
		if err := a.openInbox(p.g); err != nil {
			return err
		}
	}
	if err := p.join(); err != nil {
		return err
	}
	if p.withTerminal {
		e, prompt := p.e, ""
		if p.interactive {
			prompt = "> "
		}
		p.term = terminal.New(terminal.Config{In: e.stdin, Out: e.stdout, Err: e.stderr, Prompt: prompt, Interactive: e.stdinIsTTY(), Stream: e.streamReplies(), OutTerminal: e.isTTY(e.stdout), ErrTerminal: e.isTTY(e.stderr),
			Edit: e.streamReplies()})
		p.g.AddChannel(p.term)
	}
	var dreamLog func(context.Context, audience.Audience, int) ([]discord.DreamCommit, error)
	if p.dreamer != nil {
		dreamLog = dreamCommits(a.repo, p.g.MemoryKeep)
	}
	names, err := addChannels(p.g, cfg, logger, dreamLog, channelStore{
		posts: a.posts(), handles: a.replyHandles(), shards: p.shardLeases(), shared: a.db != nil,
	})
	if err != nil {
		return err
	}
	p.names = names
	if !p.withTerminal && !cfg.Channels.Slack.Enabled && !cfg.Channels.Discord.Enabled {
		// Under a service manager this is a gateway nobody can reach; it
		// still runs (Dream, the idle archive, /healthz), but say so.
		logger.Warn("no channel to talk through: Slack and Discord are off, and the terminal chat runs only at a terminal or with --terminal; set channels.slack.enabled or channels.discord.enabled")
	}
	return nil
}

// serve starts what answers beside the channels: the Dream schedule, the
// memory page, and /healthz's view of the gateway. stop undoes what was
// started, also after an error.
func (p *gatewayProcess) serve() (stop func(), err error) {
	cfg, a, logger := p.cfg, p.a, p.logger
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	p.ledger = a.ledger(p.dreamer)
	if p.dreamer != nil {
		p.sched, err = dream.NewScheduler(cfg.Dream.Cron, cfg.Dream.Timezone, p.dreamer, logger.With("component", "dream"))
		if err != nil {
			return stop, &configError{path: cfg.path, field: "dream.cron", msg: err.Error()}
		}
		p.sched.Start()
		logger.Info("dream scheduled", "cron", cfg.Dream.Cron, "timezone", cfg.Dream.Timezone, "next", p.sched.Next())
	}
	// The memory page is up before /healthz says "ok".
	if cfg.Web.Enabled {
		if p.page, err = startWeb(cfg, a, p.dreamer, a.dreamOff, p.health, p.names, logger); err != nil {
			return stop, err
		}
		stops = append(stops, func() {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			p.page.stop(sctx)
		})
	}
	p.health.set(p.g, a.model)
	if cfg.severalModels() {
		p.health.chains.Store(a.model)
	}
	if a.metrics != nil {
		src := metricsSources(p.g, a.model, p.ledger)
		if a.db != nil {
			src.InboxDepth = a.db.InboxDepth // over every process of the database
		}
		p.health.metrics.set(a.metrics.Handler(src))
	}
	p.health.mcp.Store(a.mcp)
	// The operator's commands reach this gateway through its admin socket.
	stops = append(stops, p.startAdmin())
	if p.interactive {
		printBanner(p.e.stderr, cfg, p.healthURL, p.page.address(), p.logPath)
	}
	return stop, nil
}

// run runs the gateway until a signal, or until the person at the terminal
// chat leaves, then stops it: the turns first, then the channels.
func (p *gatewayProcess) run(ctx context.Context) error {
	cfg, g, logger := p.cfg, p.g, p.logger
	// The channels outlive the signal: Shutdown first drains the turns
	// (their replies go out through still-connected channels), then the
	// channels are stopped.
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	ran := make(chan struct{})
	go func() { _ = g.Run(runCtx); close(ran) }()
	retained := make(chan struct{})
	if p.dreamer == nil {
		// Nothing reads the history while Dream is off: keep it bounded.
		ret := dream.Retention{Ledger: p.ledger, Logger: logger.With("component", "dream")}
		go func() { ret.Run(runCtx, 0); close(retained) }()
	} else {
		close(retained)
	}
	if cfg.severalModels() {
		logger.Info("gateway running", "models", modelsLine(cfg), "workspace", cfg.Workspace, "terminal", p.withTerminal)
	} else {
		logger.Info("gateway running", "model", cfg.LLM.Model, "workspace", cfg.Workspace, "terminal", p.withTerminal)
	}
	noteScopes(cfg, logger)
	var left <-chan struct{} // nil: never, without a terminal chat
	if p.term != nil {
		left = p.term.EOF()
	}
	select {
	case <-ctx.Done():
		logger.Info("shutting down", "reason", "signal")
	case <-left:
		logger.Info("shutting down", "reason", "terminal input ended")
	}
	p.health.stopping.Store(true)
	p.cancelBackground(ctx, ran)

	sctx, cancel := p.e.chatShutdownContext(ctx, p.term != nil && !p.interactive)
	defer cancel()
	serr := g.Shutdown(sctx)
	stop()
	<-ran
	<-retained
	if p.sched != nil {
		if err := p.sched.Stop(sctx); err != nil {
			logger.Warn("dream scheduler stop", "err", err)
		}
	}
	if serr != nil {
		// Turns still running after the grace period were cancelled: their
		// senders were told and their messages kept for the next start.
		// That is a stop done as designed, not a failure for a service
		// manager to report (or restart on).
		logger.Warn("stopped after cancelling the turns still running", "err", serr)
	}
	if p.term != nil {
		return notSentError(p.term)
	}
	return nil
}

// cancelBackground cancels a /dream started from chat (it rolls back and
// keeps its batch) as the gateway stops — unless a script's piped input
// ended: what it asked for, a /dream among it too, is done first, and only
// a signal cuts that short. ran is closed once the gateway has stopped.
func (p *gatewayProcess) cancelBackground(ctx context.Context, ran <-chan struct{}) {
	if p.term == nil || p.interactive || ctx.Err() != nil {
		p.g.CancelBackground()
		return
	}
	go func() {
		select {
		case <-ctx.Done():
			p.g.CancelBackground()
		case <-ran:
		}
	}()
}

// inboxPath is where the gateway keeps its inbox (gateway.OpenInbox): one
// file per process that owns channels, so Discord shards sharing a state
// directory each keep their own, and none answers another's messages after
// a crash.
// noteScopes says, while no conversation has made a memory scope yet (a
// workspace from before scopes, or a new one), what scoped memory means for
// the files the workspace has: nothing is moved.
func noteScopes(cfg Config, logger *slog.Logger) {
	if memoryOf(cfg).Shared() {
		logger.Info("memory is shared (memory.scoped is false): every conversation reads and writes the workspace root's memory files, so everything anyone says may reach everyone")
		return
	}
	if _, err := os.Stat(filepath.Join(cfg.Workspace, audience.ScopesDir)); errors.Is(err, fs.ErrNotExist) {
		logger.Info("memory is kept per audience: the workspace root's SOUL.md, USER.md and memory/MEMORY.md stay the terminal's (nothing is moved), and each team's channels, each person's DMs and each private channel get their own under " + audience.ScopesDir + "/, shown only there")
	}
}

func inboxPath(cfg Config) string {
	if d := cfg.Channels.Discord; d.Enabled && d.ShardCount != 0 {
		return filepath.Join(cfg.StateDir, fmt.Sprintf("inbox.shard-%d.jsonl", d.ShardID))
	}
	return filepath.Join(cfg.StateDir, "inbox.jsonl")
}

// printBanner is the first screen of an interactive gateway: what it talks
// to, where things are, and how to leave.
func printBanner(w io.Writer, cfg Config, healthURL, webURL, logPath string) {
	if healthURL == "" {
		healthURL = "off"
	}
	if cfg.severalModels() {
		fmt.Fprintf(w, "dreamgate %s · models %s\n", readVersion().Version, modelsLine(cfg))
	} else {
		fmt.Fprintf(w, "dreamgate %s · model %s at %s\n", readVersion().Version, cfg.LLM.Model, llm.RedactURL(cfg.LLM.BaseURL))
	}
	fmt.Fprintf(w, "workspace %s · health %s", cfg.Workspace, healthURL)
	if webURL != "" {
		fmt.Fprintf(w, " · memory page %s", webURL)
	}
	if logPath != "" {
		fmt.Fprintf(w, " · logs %s", logPath)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "/help for commands, Ctrl-D or /quit to leave.")
}

func openLogFile(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create log dir: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open log file: %w", err)
	}
	return f, nil
}

// fileLogger writes text lines to the log file, at info unless
// DREAMGATE_LOG_LEVEL says otherwise.
func fileLogger(w io.Writer, getenv func(string) string) *slog.Logger {
	level := slog.LevelInfo
	if l, err := parseLogLevel(getenv(logLevelVar)); err == nil {
		level = l // a bad value is refused with the config
	}
	return slog.New(slog.NewTextHandler(w, logOptions(level)))
}

// dreamCommits lists recent changes that can be undone (Dreams', restores',
// hand edits') for Discord's sha autocomplete: those that changed a file
// the asker's audience may read (keepFor, the gateway's rule for
// /dream-log).
func dreamCommits(repo *gitstore.Store, keepFor func(audience.Audience) func(string) bool) func(context.Context, audience.Audience, int) ([]discord.DreamCommit, error) {
	return func(_ context.Context, asker audience.Audience, limit int) ([]discord.DreamCommit, error) {
		cs, err := repo.LogPrefixes(limit, dream.UndoablePrefixes, keepFor(asker))
		if err != nil {
			return nil, fmt.Errorf("list dream commits: %w", err)
		}
		out := make([]discord.DreamCommit, 0, len(cs))
		for _, c := range cs {
			out = append(out, discord.DreamCommit{SHA: c.SHA, Subject: c.Subject})
		}
		return out, nil
	}
}

// channelStore is what the chat adapters keep in the store.
type channelStore struct {
	posts   channels.PostLog
	handles channels.ReplyHandles
	shards  discord.ShardLeases
	// shared: other gateways may share the store (PostgreSQL), and answer
	// what Slack sends again.
	shared bool
}

// addChannels adds the configured chat platforms, and returns them as the
// memory page's names; dreamLog (nil without Dream) feeds Discord's sha
// autocomplete.
func addChannels(g *gateway.Gateway, cfg Config, logger *slog.Logger, dreamLog func(context.Context, audience.Audience, int) ([]discord.DreamCommit, error), st channelStore) (webNames, error) {
	posts, handles, shards := st.posts, st.handles, st.shards
	names := webNames{}
	if s := cfg.Channels.Slack; s.Enabled {
		ad, err := slack.New(slack.Config{
			BotToken: s.BotToken, AppToken: s.AppToken, APIURL: s.APIURL,
			AllowFrom: s.AllowFrom, GroupPolicy: s.GroupPolicy, AllowChannels: s.AllowChannels,
			ReplyInThread: s.ReplyInThread, Logger: logger,
			Commands: gateway.Commands(), CommandPrefix: s.CommandPrefix, MaxFileBytes: s.MaxFileBytes,
			Images:    cfg.LLM.Images,
			SendRetry: time.Duration(s.SendRetryMinutes) * time.Minute, Posts: posts, Handles: handles,
			AckWhenRecorded: st.shared,
		})
		if err != nil {
			return nil, &configError{path: cfg.path, msg: err.Error()}
		}
		g.AddChannel(ad)
		names[ad.Name()] = ad
	}
	if d := cfg.Channels.Discord; d.Enabled {
		dc := discord.Config{
			Token: d.Token, APIURL: d.APIURL,
			AllowFrom: d.AllowFrom, GroupPolicy: d.GroupPolicy, AllowChannels: d.AllowChannels,
			MaxFileBytes: d.MaxFileBytes, Images: cfg.LLM.Images, Stream: d.Stream, GuildMembers: d.GuildMembers,
			ShardID: int(d.ShardID), ShardCount: int(d.ShardCount), ShardLeases: shards, StandbyPoll: cfg.lease() / 3,
			SendRetry: time.Duration(d.SendRetryMinutes) * time.Minute,
			Logger:    logger, Posts: posts, Handles: handles,
		}
		if d.SlashCommands {
			dc.Commands, dc.CommandGuilds, dc.DreamLog = gateway.Commands(), d.CommandGuilds, dreamLog
		}
		ad, err := discord.New(dc)
		if err != nil {
			return nil, &configError{path: cfg.path, msg: err.Error()}
		}
		g.AddChannel(ad)
		names[ad.Name()] = ad
	}
	return names, nil
}
