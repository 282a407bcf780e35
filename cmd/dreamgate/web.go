package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/dream"
	"github.com/dreamgate/dreamgate/gateway"
	"github.com/dreamgate/dreamgate/store"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/dreamgate/dreamgate/web"
	"github.com/dreamgate/dreamgate/workspace"
)

// The memory page (package web), served by `dreamgate gateway` when
// web.enabled: on loopback by default; any other address needs the
// operator's token. Its signing key lives in the state directory.

// defaultWebAddr is web.addr's default: this machine only, beside the
// health port.
const defaultWebAddr = "127.0.0.1:18791"

// minWebToken is the shortest token accepted: the page shows everything
// the bot remembers.
const minWebToken = 16

// webKeyFile holds the page's signing key (sessions, sign-in links, form
// tokens), made on first use; removing it signs everyone out.
const webKeyFile = "web.key"

// applyWebTokenEnv reads the token from the variable web.tokenEnv names.
func applyWebTokenEnv(cfg *Config, getenv func(string) string) *configError {
	name := strings.TrimSpace(cfg.Web.TokenEnv)
	if name == "" {
		return nil
	}
	v := getenv(name)
	if v == "" {
		if !cfg.Web.Enabled || cfg.withoutSecrets {
			return nil
		}
		return &configError{field: "web.tokenEnv", msg: fmt.Sprintf("names the environment variable %s, which is not set", name)}
	}
	cfg.Web.Token = v
	if cfg.fromEnv == nil {
		cfg.fromEnv = map[string]string{}
	}
	cfg.fromEnv["web.token"] = name
	return nil
}

func (w WebConfig) validate() error {
	if !validHostPort(w.Addr) {
		return bad("web.addr", "must be host:port with a port from 0 to 65535, got %q", w.Addr)
	}
	if w.Token != "" && len(w.Token) < minWebToken {
		return bad("web.token", "must be at least %d characters (for example the output of `openssl rand -hex 24`)", minWebToken)
	}
	if w.URL != "" {
		if err := checkURL("web.url", w.URL); err != nil {
			return err
		}
	}
	return nil
}

// validateSecret: a page other machines can reach needs its token, which
// only the gateway (which serves the page) is given.
func (w WebConfig) validateSecret() error {
	if w.Enabled && w.Token == "" && !web.LoopbackAddr(w.Addr) {
		return bad("web.addr", "%s can be reached from other machines, so the memory page needs a token there: set web.token (or web.tokenEnv); without one it listens on loopback only (127.0.0.1), and the operator signs in with the one-time link `dreamgate web-link` prints", w.Addr)
	}
	return nil
}

// webKey reads the page's signing key from the state directory, making a
// new one (32 random bytes, owner-only) when there is none.
func webKey(stateDir string, logger *slog.Logger) ([]byte, error) {
	secrets := stateSecrets{dir: stateDir}
	key, err := secrets.Secret(webKeyFile, newPageKey)
	if err != nil || len(key) >= 32 {
		return key, err
	}
	p := filepath.Join(stateDir, webKeyFile)
	logger.Warn("the memory page's key was too short; a new one is made (everyone signs in again)", "file", p)
	if err := os.Remove(p); err != nil {
		return nil, fmt.Errorf("replace the memory page's key: %w", err)
	}
	return secrets.Secret(webKeyFile, newPageKey)
}

// newPageKey makes a memory page's key: 32 random bytes.
func newPageKey() ([]byte, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("make the memory page's key: %w", err)
	}
	return key, nil
}

// stateSecrets are the embedded engine's secrets (store.Secrets): a file
// each in the state directory, owner-only, written atomically. Two
// processes making one at the same moment may each keep their own until
// the next read; the gateway makes the page's key at its start.
type stateSecrets struct{ dir string }

var _ store.Secrets = stateSecrets{}

// Secret implements store.Secrets.
func (s stateSecrets) Secret(name string, make func() ([]byte, error)) ([]byte, error) {
	if v, ok, err := s.Lookup(name); err != nil || ok {
		return v, err
	}
	v, err := make()
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.dir, 0o700); err != nil {
		return nil, err
	}
	if err := workspace.WriteFile(filepath.Join(s.dir, name), v, 0o600); err != nil {
		return nil, fmt.Errorf("save the secret %s: %w", name, err)
	}
	return v, nil
}

// Lookup implements store.Secrets: a missing or empty file is none.
func (s stateSecrets) Lookup(name string) ([]byte, bool, error) {
	v, err := os.ReadFile(filepath.Join(s.dir, name))
	if errors.Is(err, fs.ErrNotExist) || err == nil && len(v) == 0 {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read the secret %s: %w", name, err)
	}
	return v, true, nil
}

// webLinks gives /web-link the page's sign-in links: the gateway is
// built before the page (the page reads the gateway's Dream), so the page
// is set here once it runs. In a process without the page (`dreamgate
// chat` beside a running gateway) the links are made with the page's key
// from the state directory, as `dreamgate web-link` makes them.
type webLinks struct {
	srv      atomic.Pointer[web.Server]
	stateDir string
	web      WebConfig
	// db holds the key on the PostgreSQL engine (nil: the state
	// directory).
	db *postgres.DB
}

func (l *webLinks) SignInLink(a audience.Audience) (string, error) {
	if s := l.srv.Load(); s != nil {
		return s.SignInLink(a)
	}
	key, err := readPageKey(l.db, l.stateDir)
	if err != nil {
		return "", err
	}
	return web.Link(key, webBaseURL(l.web), a, web.DefaultLinkTTL, time.Now())
}

// webLinksDep is /web-link's source when the page is on, else nil (the
// command then says the page is off).
func (a *app) webLinksDep() gateway.WebLinks {
	if !a.cfg.Web.Enabled {
		return nil
	}
	if a.webLinks == nil {
		a.webLinks = &webLinks{stateDir: a.cfg.StateDir, web: a.cfg.Web, db: a.db}
	}
	return a.webLinks
}

// webNames gives the memory page the names the running chat adapters
// know (their PersonName and ChatName), by platform.
type webNames map[string]interface {
	PersonName(ctx context.Context, team, person string) string
	ChatName(ctx context.Context, team, chat string) string
}

func (n webNames) PersonName(ctx context.Context, platform, team, person string) string {
	if ad := n[platform]; ad != nil {
		return ad.PersonName(ctx, team, person)
	}
	return ""
}

func (n webNames) ChatName(ctx context.Context, platform, team, chat string) string {
	if ad := n[platform]; ad != nil {
		return ad.ChatName(ctx, team, chat)
	}
	return ""
}

// webPage is the running memory page.
type webPage struct {
	srv  *web.Server
	http *http.Server
	url  string
}

// startWeb serves the memory page on web.addr until stop. d is nil when
// Dream does not run (dreamOff says why).
func startWeb(cfg Config, a *app, d *dream.Dreamer, dreamOff string, health *healthState, names webNames, logger *slog.Logger) (*webPage, error) {
	key, err := a.pageKey(logger)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", cfg.Web.Addr)
	if err != nil {
		return nil, fmt.Errorf("web.addr %s: %w", cfg.Web.Addr, err)
	}
	base := cfg.Web.URL
	if base == "" {
		base = "http://" + ln.Addr().String()
	}
	deps := web.Deps{
		Memory:  a.mem,
		History: a.history,
		Health:  func() web.Health { return webHealth(health.report()) },
		Usage:   a.model.Usage,
		Search:  webRecall{a.recallIndex()},
		Names:   names,
	}
	if a.prompts != nil {
		deps.Budget = a.prompts
	}
	if repo, err := a.openRepo(); err == nil {
		deps.Repo = repo
	} else {
		logger.Warn("the memory page has no timeline: the memory repository could not be opened", "err", err)
	}
	if d != nil {
		deps.Dream = d
	} else {
		deps.DreamOff = dreamOff
	}
	wcfg := web.Config{
		Key: key, Token: cfg.Web.Token, BaseURL: base, Admins: cfg.Admins,
		Logger: logger.With("component", "web"), Now: a.now,
	}
	if a.db != nil {
		// Every process and restart sees which links were used.
		wcfg.UsedLinks = a.db.Nonces("web-link")
	}
	if cfg.Dream.Enabled {
		wcfg.DreamCron, wcfg.DreamTimezone = cfg.Dream.Cron, cfg.Dream.Timezone
	}
	srv, err := web.New(wcfg, deps)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	if a.webLinks != nil {
		a.webLinks.srv.Store(srv)
	}
	hs := &http.Server{Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 30 * time.Second,
		WriteTimeout: time.Minute, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10}
	go func() {
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("memory page stopped", "err", err)
		}
	}()
	logger.Info("memory page listening; the operator signs in with the link /web-link answers in the terminal chat or `dreamgate web-link` prints", "url", base)
	return &webPage{srv: srv, http: hs, url: base}, nil
}

// stop ends the page within ctx.
func (p *webPage) stop(ctx context.Context) {
	if p != nil {
		_ = p.http.Shutdown(ctx)
	}
}

// webHealth is /healthz's report as the overview shows it.
func webHealth(r healthReport) web.Health {
	h := web.Health{Status: r.Status}
	if len(r.Chains) > 0 {
		for _, c := range r.Chains {
			for _, name := range c.Models {
				m := web.ModelHealth{Purpose: c.Purpose, Name: name, State: "unknown", Served: name == c.Served}
				if m.Served {
					m.State = "reachable"
				}
				if i := slices.IndexFunc(c.Cooling, func(cm coolingModel) bool { return cm.Model == name }); i >= 0 {
					m.State, m.Until, m.LastError = "cooling", c.Cooling[i].Until, c.Cooling[i].Reason
				}
				h.Models = append(h.Models, m)
			}
		}
	} else if r.Model != nil {
		m := web.ModelHealth{Name: r.Model.Name, State: r.Model.State, LastError: r.Model.LastError}
		if r.Model.LastErrorAt != nil {
			m.LastErrorAt = *r.Model.LastErrorAt
		}
		h.Models = append(h.Models, m)
	}
	for _, n := range slices.Sorted(maps.Keys(r.Channels)) {
		c := r.Channels[n]
		h.Channels = append(h.Channels, web.ChannelHealth{Name: n, State: c.State, Detail: c.Detail, Since: c.Since})
	}
	for _, s := range r.MCP {
		h.Tools = append(h.Tools, web.ToolHealth{Name: s.Name, State: s.State, Problem: s.Problem})
	}
	return h
}

// address is the page's URL, "" when it does not run.
func (p *webPage) address() string {
	if p == nil {
		return ""
	}
	return p.url
}
