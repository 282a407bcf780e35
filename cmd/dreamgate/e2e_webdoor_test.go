package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/dreamgate/dreamgate/internal/testkit"
)

// fetchEnv, when set, makes this test binary a plain HTTP client (see
// maybeFetch): the page's door test runs it as another local account.
const fetchEnv = "DREAMGATE_TEST_FETCH"

// maybeFetch, in a test binary started with fetchEnv naming a URL, gets
// that URL without following redirects (or posts fetchEnv_FORM to it),
// prints the status and the body, and exits: another local account's
// browser, as far as the page can tell.
func maybeFetch() {
	u := os.Getenv(fetchEnv)
	if u == "" {
		return
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var res *http.Response
	var err error
	if form := os.Getenv(fetchEnv + "_FORM"); form != "" {
		res, err = c.Post(u, "application/x-www-form-urlencoded", strings.NewReader(form))
	} else {
		res, err = c.Get(u)
	}
	if err != nil {
		fmt.Println("error", err)
		os.Exit(1)
	}
	b, _ := io.ReadAll(res.Body)
	fmt.Printf("%d\n%s", res.StatusCode, b)
	os.Exit(0)
}

const doorSecret = "The operator's safe code is DOORSECRET31."

// The memory page without web.token never takes an address or a missing
// header for the operator: another local account (nobody) and a plain
// proxy in front (httputil.ReverseProxy, adding no forwarding header) both
// meet the sign-in page, and a form they post is refused. The operator
// signs in with the one-time link `dreamgate web-link` prints (it reads the
// page's key in the state directory, which only the gateway's account can
// read), or the one /web-link answers in the terminal chat; a link works
// once.
func TestWebDoorWithoutAToken(t *testing.T) {
	h := newHarness(t)
	addr := freeAddr(t)
	h.set("web.enabled", true)
	h.set("web.addr", addr)
	testkit.WriteFile(t, h.ws, "USER.md", "# User\n\n- "+doorSecret+" <!-- permanent 2026-11-20 -->\n")
	p := h.startGateway(t)
	base := "http://" + addr
	waitWeb(t, p, base)

	t.Run("a plain proxy in front", func(t *testing.T) { doorThroughAProxy(t, base) })
	t.Run("another local account", func(t *testing.T) { doorAsAnotherAccount(t, base) })
	t.Run("the operator's link", func(t *testing.T) { doorWithTheOperatorsLink(t, h, p, base) })
}

func doorThroughAProxy(t *testing.T, base string) {
	target, _ := url.Parse(base)
	proxy := httptest.NewServer(&httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target) // no X-Forwarded-*, no Forwarded: nginx's default proxy_pass
	}})
	t.Cleanup(proxy.Close)
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/", "/memory/default", "/search?q=safe"} {
		res, err := c.Get(proxy.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/signin" || strings.Contains(string(b), "DOORSECRET31") {
			t.Errorf("%s through a proxy: %d %q\n%s", path, res.StatusCode, res.Header.Get("Location"), b)
		}
	}
}

func doorAsAnotherAccount(t *testing.T, base string) {
	client := asNobody(t)
	for _, path := range []string{"/memory/default", "/timeline"} {
		code, body := client(base+path, "")
		if code != http.StatusSeeOther || strings.Contains(body, "DOORSECRET31") {
			t.Errorf("nobody GET %s: %d\n%s", path, code, body)
		}
	}
	if code, body := client(base+"/restore/"+strings.Repeat("a", 40), "csrf=x&expect=y"); code == http.StatusSeeOther || code < 400 {
		t.Errorf("nobody's restore post: %d\n%s", code, body)
	}
}

func doorWithTheOperatorsLink(t *testing.T, h *harness, p *gatewayProc, base string) {
	r := h.run("web-link")
	link := strings.TrimSpace(r.stdout)
	if r.code != 0 || !strings.HasPrefix(link, base+"/signin?link=") {
		t.Fatalf("dreamgate web-link: exit %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(u string) (int, string) {
		t.Helper()
		res, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	if code, page := get(link); code != http.StatusOK || !strings.Contains(page, "operator") {
		t.Fatalf("the link's page: %d\n%s", code, page)
	}
	res, err := c.PostForm(base+"/signin", url.Values{"link": {"1"}})
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("signing in with the link: %d", res.StatusCode)
	}
	if code, page := get(base + "/memory/default"); code != http.StatusOK || !strings.Contains(page, "DOORSECRET31") {
		t.Errorf("the operator's memory after signing in: %d\n%s", code, page)
	}
	// Once only.
	jar2, _ := cookiejar.New(nil)
	c.Jar = jar2
	if code, _ := get(link); code != http.StatusUnauthorized {
		t.Errorf("the link a second time: %d", code)
	}
	// /web-link in the terminal chat, the operator's own, answers
	// with such a link too.
	r = h.run("chat", "-m", "/web-link")
	chatLink := signInLinkRe.FindString(r.stdout)
	if r.code != 0 || chatLink == "" || chatLink == link {
		t.Fatalf("/web-link in the terminal: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if code, page := get(chatLink); code != http.StatusOK || !strings.Contains(page, "the operator") {
		t.Errorf("the terminal's link: %d\n%s", code, page)
	}
	if strings.Contains(p.stderr.String(), "link=") {
		t.Error("the gateway logged a sign-in link")
	}
}

// asNobody returns a client that fetches a URL as the local account
// nobody (this test binary run with that account's credentials), giving
// the status and the body; form, when set, is posted. It needs root, to
// change accounts: CI runs as root, and there the test must not be skipped.
func asNobody(t *testing.T) func(u, form string) (int, string) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI must run this test as root: it starts a client as another local account (nobody)")
		}
		t.Skip("skipped: starting a client as another local account (nobody) needs root, as CI runs")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("no account nobody: %v", err)
	}
	uid, _ := strconv.Atoi(nobody.Uid)
	gid, _ := strconv.Atoi(nobody.Gid)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The test binary sits in an owner-only folder: copy it where nobody
	// may run it.
	dir, err := os.MkdirTemp("", "dreamgate-nobody-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "client")
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return func(u, form string) (int, string) {
		t.Helper()
		cmd := exec.Command(bin, "-test.run=^$")
		cmd.Dir = dir
		cmd.Env = []string{fetchEnv + "=" + u, fetchEnv + "_FORM=" + form, "PATH=/usr/bin:/bin"}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("the client as nobody: %v\n%s", err, out)
		}
		status, body, _ := strings.Cut(string(out), "\n")
		code, err := strconv.Atoi(status)
		if err != nil {
			t.Fatalf("the client as nobody: %s", out)
		}
		return code, body
	}
}
