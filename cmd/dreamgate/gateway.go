package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/dreamgate/dreamgate/channels"
	"github.com/dreamgate/dreamgate/channels/discord"
	"github.com/dreamgate/dreamgate/channels/slack"
	"github.com/dreamgate/dreamgate/channels/terminal"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/mcp"
)

// cmdGateway runs every enabled channel, the Dream scheduler and /healthz
// until SIGINT or SIGTERM.
func cmdGateway(ctx context.Context, e *env, args []string) error {
	fs := e.flags("gateway")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	// With the terminal chat on a TTY, info lines would interleave with the
	// conversation; keep them for headless runs (DREAMGATE_LOG_LEVEL
	// overrides either way).
	level := slog.LevelInfo
	if cfg.Channels.Terminal.Enabled && e.stdinIsTTY() {
		level = slog.LevelWarn
	}
	logger := e.logger(level)

	// /healthz answers first, before anything slow, so supervisors see the
	// process alive at once; it reports "starting" until the channels run.
	health := &healthState{}
	var srv *http.Server
	if cfg.Gateway.HealthAddr != "" {
		ln, err := net.Listen("tcp", cfg.Gateway.HealthAddr)
		if err != nil {
			return fmt.Errorf("gateway.healthAddr %s: %w", cfg.Gateway.HealthAddr, err)
		}
		srv = &http.Server{Handler: health.handler(), ReadHeaderTimeout: 5 * time.Second}
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				logger.Error("health server stopped", "err", err)
			}
		}()
		logger.Info("health endpoint listening", "addr", ln.Addr().String())
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
		}()
	}

	a, err := newApp(cfg, logger)
	if err != nil {
		return err
	}
	defer a.close()
	g, dreamer := a.gateway(cfg.Dream.Enabled)
	if err := addChannels(g, cfg, e, logger); err != nil {
		return err
	}

	var sched *dream.Scheduler
	if dreamer != nil {
		sched, err = dream.NewScheduler(cfg.Dream.Cron, cfg.Dream.Timezone, dreamer, logger.With("component", "dream"))
		if err != nil {
			return &configError{path: cfg.path, field: "dream.cron", msg: err.Error()}
		}
		sched.Start()
		logger.Info("dream scheduled", "cron", cfg.Dream.Cron, "timezone", cfg.Dream.Timezone, "next", sched.Next())
	}
	health.set(g)
	health.mcp.Store(a.mcp)

	// The channels outlive the signal: Shutdown first drains the turns
	// (their replies go out through still-connected channels), then the
	// channels are stopped.
	runCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	ran := make(chan struct{})
	go func() { _ = g.Run(runCtx); close(ran) }()
	logger.Info("gateway running", "model", cfg.LLM.Model, "workspace", cfg.Workspace)
	<-ctx.Done()

	logger.Info("shutting down")
	sctx, cancel := shutdownContext()
	defer cancel()
	serr := g.Shutdown(sctx)
	stop()
	<-ran
	if sched != nil {
		if err := sched.Stop(sctx); err != nil {
			logger.Warn("dream scheduler stop", "err", err)
		}
	}
	return serr
}

func addChannels(g *gateway.Gateway, cfg Config, e *env, logger *slog.Logger) error {
	if cfg.Channels.Terminal.Enabled {
		prompt := ""
		if e.stdinIsTTY() {
			prompt = "> "
		}
		g.AddChannel(terminal.New(terminal.Config{In: e.stdin, Out: e.stdout, Err: e.stderr, Prompt: prompt, Stream: e.streamReplies()}))
	}
	if s := cfg.Channels.Slack; s.Enabled {
		ad, err := slack.New(slack.Config{
			BotToken: s.BotToken, AppToken: s.AppToken, APIURL: s.APIURL,
			AllowFrom: s.AllowFrom, GroupPolicy: s.GroupPolicy, AllowChannels: s.AllowChannels,
			ReplyInThread: s.ReplyInThread, Logger: logger,
		})
		if err != nil {
			return &configError{path: cfg.path, msg: err.Error()}
		}
		g.AddChannel(ad)
	}
	if d := cfg.Channels.Discord; d.Enabled {
		ad, err := discord.New(discord.Config{
			Token: d.Token, APIURL: d.APIURL,
			AllowFrom: d.AllowFrom, GroupPolicy: d.GroupPolicy, AllowChannels: d.AllowChannels,
			Logger: logger,
		})
		if err != nil {
			return &configError{path: cfg.path, msg: err.Error()}
		}
		g.AddChannel(ad)
	}
	return nil
}

// healthState serves GET /healthz: "starting" until the gateway is wired,
// then each channel's state.
type healthState struct {
	g   atomicGateway
	mcp atomic.Pointer[mcp.Manager] // nil: no MCP servers
}

func (h *healthState) set(g *gateway.Gateway) { h.g.Store(g) }

func (h *healthState) handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		body := struct {
			Status   string                     `json:"status"`
			Channels map[string]channels.Health `json:"channels"`
			// MCP details each MCP server; one that is down does not make
			// the gateway degraded (its chats still work).
			MCP []mcp.ServerStatus `json:"mcp,omitempty"`
		}{Status: "starting", Channels: map[string]channels.Health{}}
		if m := h.mcp.Load(); m != nil {
			body.MCP = m.Status()
		}
		if g := h.g.Load(); g != nil {
			body.Channels = g.Health()
			body.Status = "ok"
			for _, c := range body.Channels {
				if c.State != channels.StateConnected && c.State != channels.StateStopped {
					body.Status = "degraded"
				}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(body)
	})
	return mux
}

type atomicGateway = atomic.Pointer[gateway.Gateway]
