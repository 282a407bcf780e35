package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/store/postgres"
	"github.com/dreamgate/dreamgate/web"
)

// cmdWebLink is `web-link`: a one-time link that signs the operator in to
// the memory page, made with the page's key in the state directory. Only
// the account the gateway runs as can read that key (owner-only), so only
// it can make one: a second local account reaching the page's port gets
// the sign-in page, never the operator's pages.
func cmdWebLink(_ context.Context, e *env, args []string) error {
	fs := e.flags("web-link")
	if err := e.parse(fs, args, 0); err != nil {
		return err
	}
	cfg, err := e.config()
	if err != nil {
		return err
	}
	if !cfg.Web.Enabled {
		return &exitError{code: 1, err: errors.New("The memory page is off: set web.enabled to true in the config and start the gateway.")}
	}
	key, err := lookupPageKey(cfg, e.logger(slog.LevelWarn))
	if err != nil {
		return &exitError{code: 1, err: err}
	}
	link, err := web.Link(key, webBaseURL(cfg.Web), audience.Audience{Kind: audience.Operator}, web.DefaultLinkTTL, time.Now())
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, link)
	fmt.Fprintf(e.stderr, "This link signs the operator in to the memory page once, within %d minutes, on the running gateway. Keep it to yourself.\n",
		int(web.DefaultLinkTTL.Minutes()))
	return nil
}

// lookupPageKey reads the page's signing key from the engine in use: the
// database's secrets, or the state directory (readWebKey).
func lookupPageKey(cfg Config, logger *slog.Logger) ([]byte, error) {
	db, err := openDatabase(cfg, logger)
	if err != nil || db == nil {
		if err != nil {
			return nil, err
		}
		return readWebKey(cfg.StateDir)
	}
	defer db.Close()
	return readPageKey(db, cfg.StateDir)
}

// readPageKey reads the page's signing key as readWebKey does, from the
// database when db is set.
func readPageKey(db *postgres.DB, stateDir string) ([]byte, error) {
	if db == nil {
		return readWebKey(stateDir)
	}
	key, ok, err := db.Secrets().Lookup(pageKeyName)
	switch {
	case err != nil:
		return nil, err
	case !ok:
		return nil, errors.New("The memory page has not run yet (no key in the database): start the gateway with web.enabled, then ask again.")
	case len(key) < 32:
		return nil, errors.New("The memory page's key in the database is not valid; remove it (the secrets table's web.key) and start the gateway again.")
	}
	return key, nil
}

// readWebKey reads the page's signing key, which the gateway makes on its
// first start with the page on; it is never made here (a link signed with
// a key the running page does not hold would sign nobody in).
func readWebKey(stateDir string) ([]byte, error) {
	p := filepath.Join(stateDir, webKeyFile)
	key, err := os.ReadFile(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, errors.New("The memory page has not run yet (no key in " + stateDir + "): start the gateway with web.enabled, then ask again.")
	case errors.Is(err, fs.ErrPermission):
		return nil, errors.New("Cannot read the memory page's key in " + stateDir + ": run this as the account the gateway runs as.")
	case err != nil:
		return nil, fmt.Errorf("read the memory page's key: %w", err)
	case len(key) < 32:
		return nil, errors.New("The memory page's key in " + stateDir + " is not valid: start the gateway, which makes a new one, then ask again.")
	}
	return key, nil
}

// webBaseURL is where browsers reach the page: web.url, else web.addr on
// this machine.
func webBaseURL(w WebConfig) string {
	if w.URL != "" {
		return w.URL
	}
	host, port, err := net.SplitHostPort(w.Addr)
	if err != nil {
		return "http://" + w.Addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port)
}
