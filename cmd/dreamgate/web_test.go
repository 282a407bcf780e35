package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/internal/testkit"
)

const testWebToken = "web-token-7f3a9c2e1b"

// `dreamgate gateway` with web.enabled serves the memory page: the
// operator signs in with the token and reads the overview and the memory;
// the token is never logged, and the page's key is the state directory's,
// owner-only.
func TestWebPageThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	addr := freeAddr(t)
	h.set("web.enabled", true)
	h.set("web.addr", addr)
	h.set("web.token", testWebToken)
	testkit.WriteFile(t, h.ws, "USER.md", "# User\n\n- The operator likes green tea. <!-- permanent 2026-11-20 src:1 -->\n")
	testkit.WriteFile(t, h.ws, "memory/COLD.md", "# Cold memory\n\n- The operator once kept a narwhal called Wobblefin. <!-- durable 2026-02-01 -->\n")
	p := h.startGateway(t)
	waitWeb(t, p, "http://"+addr)

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	base := "http://" + addr
	get := func(path string) (int, string) {
		t.Helper()
		res, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, _ := get("/"); code != http.StatusSeeOther {
		t.Fatalf("before signing in: %d", code)
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/signin", strings.NewReader(url.Values{"token": {testWebToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	res, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in: %d", res.StatusCode)
	}
	code, page := get("/")
	if code != http.StatusOK || !strings.Contains(page, "test-model") || !strings.Contains(page, "Dream") {
		t.Errorf("overview: %d\n%s", code, page)
	}
	code, page = get("/memory/default")
	if code != http.StatusOK || !strings.Contains(page, "The operator likes green tea.") || !strings.Contains(page, "permanent") {
		t.Errorf("memory: %d\n%s", code, page)
	}
	if code, page = get("/timeline"); code != http.StatusOK || !strings.Contains(page, "init: memory store") {
		t.Errorf("timeline: %d\n%s", code, page)
	}
	// The search is the recall index's: cold memory is found. The index
	// is built on the first search, which may answer before it ends.
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		code, page = get("/search?q=wobblefin")
		if code == http.StatusOK && strings.Contains(page, "narwhal called Wobblefin") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("search: %d\n%s", code, page)
		}
	}
	if key, ok := pageKeyInDatabase(t, h.ws); ok {
		if len(key) != 32 {
			t.Errorf("the page's key in the database: %d bytes", len(key))
		}
	} else if fi, err := os.Stat(filepath.Join(h.state, webKeyFile)); err != nil || fi.Mode().Perm() != 0o600 || fi.Size() != 32 {
		t.Errorf("the page's key: %v, %v", fi, err)
	}
	if strings.Contains(p.stderr.String(), testWebToken) {
		t.Error("the token is in the log")
	}
	if !strings.Contains(p.stderr.String(), "memory page listening") {
		t.Errorf("the log does not say where the page is:\n%s", p.stderr.String())
	}
}

// An address other machines can reach is refused without a token, naming
// the key; a token too short to guard the page likewise; a token from
// web.tokenEnv's variable is used, and an unset one named.
func TestWebConfig(t *testing.T) {
	h := newHarness(t)
	h.set("web.enabled", true)
	h.set("web.addr", "0.0.0.0:18791")
	res := h.run("gateway")
	if res.code != 2 || !strings.Contains(res.stderr, "web.addr") || !strings.Contains(res.stderr, "web.token") {
		t.Errorf("an open address without a token: exit %d\n%s", res.code, res.stderr)
	}
	h.set("web.token", "short")
	if res := h.run("gateway"); res.code != 2 || !strings.Contains(res.stderr, "web.token") {
		t.Errorf("a short token: exit %d\n%s", res.code, res.stderr)
	}
	h.set("web.token", "")
	h.set("web.tokenEnv", "DG_TEST_WEB_TOKEN")
	cfg, err := loadConfig(h.cfgPath, func(k string) string {
		if k == "DG_TEST_WEB_TOKEN" {
			return testWebToken
		}
		return ""
	})
	if err != nil || cfg.Web.Token != testWebToken {
		t.Errorf("the token from web.tokenEnv: %q, %v", cfg.Web.Token, err)
	}
	if _, err := loadConfig(h.cfgPath, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "web.tokenEnv") {
		t.Errorf("web.tokenEnv naming an unset variable: %v", err)
	}
	// On loopback no token is needed.
	h.set("web.tokenEnv", "")
	h.set("web.addr", "127.0.0.1:18791")
	if _, err := loadConfig(h.cfgPath, func(string) string { return "" }); err != nil {
		t.Errorf("loopback without a token: %v", err)
	}
}

// waitWeb polls the memory page until it answers: the gateway is another
// process, so there is nothing to wait on but its answers.
func waitWeb(t *testing.T, p *gatewayProc, base string) {
	t.Helper()
	deadline := time.After(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if res, err := http.Get(base + "/signin"); err == nil {
			res.Body.Close()
			return
		}
		select {
		case <-deadline:
			t.Fatalf("the memory page did not answer within 30s; log:\n%s", p.stderr.String())
		case <-p.exited:
			t.Fatalf("the gateway exited; log:\n%s", p.stderr.String())
		case <-tick.C:
		}
	}
}
