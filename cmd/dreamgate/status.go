package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/robfig/cron/v3"
)

// cmdStatus prints config, workspace, provider reachability and Dream
// times, without calling a model.
func cmdStatus(ctx context.Context, e *env, args []string) error {
	fs := e.flags("status")
	if err := e.parse(fs, args); err != nil {
		return err
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	a, err := newApp(cfg, e.logger(slog.LevelWarn))
	if err != nil {
		return err
	}
	defer a.close()
	w := e.stdout
	if cfg.path == "" {
		fmt.Fprintln(w, "Config: none (defaults); `dreamgate onboard` writes one")
	} else {
		fmt.Fprintf(w, "Config: %s\n", cfg.path)
	}
	fmt.Fprintf(w, "Workspace: %s\n", cfg.Workspace)
	fmt.Fprintf(w, "Sessions: %s\n", cfg.StateDir)

	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := a.model.Ping(pctx); err != nil {
		fmt.Fprintf(w, "Model: %s at %s — %s\n", cfg.LLM.Model, cfg.LLM.BaseURL, llm.UserMessage(err))
	} else {
		fmt.Fprintf(w, "Model: %s at %s — reachable\n", cfg.LLM.Model, cfg.LLM.BaseURL)
	}

	if n, err := a.history.Len(); err == nil {
		dc, _ := a.history.DreamCursor()
		last, _ := a.history.LastCursor()
		noun := "entries"
		if n == 1 {
			noun = "entry"
		}
		fmt.Fprintf(w, "History: %d %s, last cursor %d, Dream has read up to %d\n", n, noun, last, dc)
	}
	if !cfg.Dream.Enabled {
		fmt.Fprintln(w, "Dream: off")
		return nil
	}
	if repo, err := a.openRepo(); err != nil {
		fmt.Fprintf(w, "Dream: memory repository unavailable (%v)\n", err)
	} else if cs, err := repo.Log(1, dream.SubjectPrefix); err == nil && len(cs) > 0 {
		fmt.Fprintf(w, "Last Dream commit: %s %s %s\n", cs[0].Short, cs[0].When.Format("2006-01-02 15:04"), cs[0].Subject)
	} else {
		fmt.Fprintln(w, "Last Dream commit: none yet")
	}
	loc, _ := time.LoadLocation(cfg.Dream.Timezone)
	if sched, err := cron.ParseStandard(cfg.Dream.Cron); err == nil {
		fmt.Fprintf(w, "Next Dream: %s (cron %q, %s) when the gateway runs\n",
			sched.Next(time.Now().In(loc)).Format("2006-01-02 15:04 MST"), cfg.Dream.Cron, cfg.Dream.Timezone)
	}
	return nil
}
