package main

import (
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/internal/testkit"
	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// The operator's commands need only what they use: with Slack, Discord and
// a memory page open to the network in the config, and none of their
// tokens in the shell (the service keeps them in its own environment),
// status, why and dream log|restore run; only the gateway needs them.
func TestOperatorCommandsNeedNoChannelSecrets(t *testing.T) {
	h := newHarness(t)
	h.set("channels.slack", map[string]any{"enabled": true})
	h.set("channels.discord", map[string]any{"enabled": true})
	h.set("web", map[string]any{"enabled": true, "addr": "0.0.0.0:" + strings.Split(freeAddr(t), ":")[1], "tokenEnv": "DREAMGATE_WEB_TOKEN"})
	r := h.run("status")
	if r.code != 0 || !strings.Contains(r.stdout, "Channel slack: enabled, bot token missing, app token missing") {
		t.Errorf("status: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, args := range [][]string{{"why", "tea"}, {"dream", "log"}, {"dream", "restore"}} {
		if r := h.run(args...); r.code == 2 || strings.Contains(r.stderr, "invalid config") {
			t.Errorf("%v: exit %d\n%s%s", args, r.code, r.stdout, r.stderr)
		}
	}
	// The gateway, which runs the channels, still wants them.
	if r := h.run("gateway"); r.code != 2 || !strings.Contains(r.stderr, "invalid config") {
		t.Errorf("gateway without the tokens: exit %d\n%s", r.code, r.stderr)
	}
}

// dreamCommit makes one Dream commit in h's workspace, through the binary,
// and returns its short sha.
func dreamCommit(t *testing.T, h *harness) string {
	t.Helper()
	h.llm.Push(
		llmtest.Text("Noted: tea, not coffee."),
		llmtest.Text("- The user prefers tea over coffee"),
	)
	for _, m := range []string{"I prefer tea over coffee.", "/new"} {
		if r := h.run("chat", "-m", m); r.code != 0 {
			t.Fatalf("chat %q: %d %s", m, r.code, r.stderr)
		}
	}
	h.llm.Push(
		llmtest.Text("[USER] prefers tea over coffee"),
		llmtest.ToolCall("edit_file", `{"path":"USER.md","old_text":"## Preferences\n","new_text":"## Preferences\n- Prefers tea over coffee.\n"}`),
		llmtest.Text("Added the preference to USER.md."),
	)
	if r := h.run("dream", "run"); r.code != 0 {
		t.Fatalf("dream run: %d %s%s", r.code, r.stdout, r.stderr)
	}
	r := h.run("dream", "log")
	sha := regexp.MustCompile("`([0-9a-f]{8})`").FindStringSubmatch(r.stdout)
	if sha == nil {
		t.Fatalf("no Dream commit:\n%s%s", r.stdout, r.stderr)
	}
	return sha[1]
}

// nobodyAccount is the local account nobody, for the tests that run a
// process as another account; they need root, as CI runs them.
func nobodyAccount(t *testing.T) (uid, gid int) {
	t.Helper()
	if os.Geteuid() != 0 {
		if os.Getenv("CI") != "" {
			t.Fatal("CI must run this test as root: it runs the gateway as another local account (nobody)")
		}
		t.Skip("skipped: running the gateway as another local account (nobody) needs root, as CI runs")
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("no account nobody: %v", err)
	}
	uid, _ = strconv.Atoi(u.Uid)
	gid, _ = strconv.Atoi(u.Gid)
	return uid, gid
}

// publicCopy is the binary copied where any account may run it (the tests'
// build sits in an owner-only folder).
func publicCopy(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dreamgate-pub-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(binPath)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "dreamgate")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// openHome lets any account into h's home (the test's temporary folders
// are owner-only), as a service's configuration folder is.
func openHome(t *testing.T, h *harness) {
	t.Helper()
	for _, d := range []string{filepath.Dir(h.home), h.home} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// chownTree gives root's tree to uid:gid.
func chownTree(t *testing.T, root string, uid, gid int) {
	t.Helper()
	err := filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Lchown(p, uid, gid)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// As under systemd: the gateway runs as its own account, owning the state
// directory, with the Slack tokens in its environment alone; the operator,
// root in a shell without them, asks it for its status and has it undo a
// Dream commit through the admin socket — the files it writes stay the
// gateway's account's. With the gateway stopped, the operator's command
// refuses to write another account's files instead.
func TestOperatorReachesTheRunningGatewayAsItsAccount(t *testing.T) {
	uid, gid := nobodyAccount(t)
	h := newHarness(t)
	sha := dreamCommit(t, h)
	sl := fakeslack.New(fakeslack.Config{})
	t.Cleanup(sl.Close)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{"enabled": true, "apiURL": sl.APIURL()})
	addr := freeAddr(t)
	h.set("gateway.healthAddr", addr)
	openHome(t, h)
	chownTree(t, h.home, uid, gid)

	cmd := exec.Command(publicCopy(t), "--config", h.cfgPath, "gateway")
	cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC",
		"SLACK_BOT_TOKEN=" + sl.BotToken(), "SLACK_APP_TOKEN=" + sl.AppToken()}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	p := &gatewayProc{cmd: cmd, stderr: &testkit.Buffer{}, health: "http://" + addr + "/healthz", exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.stderr, p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() { p.stop(20 * time.Second) })
	p.waitConnected(t, "slack")
	p.stderr.WaitFor(t, "admin socket listening")

	r := h.run("status")
	for _, want := range []string{"Gateway: running", "bot token set (from SLACK_BOT_TOKEN)", "— connected"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("status lacks %q: exit %d\n%s%s", want, r.code, r.stdout, r.stderr)
		}
	}
	if r.code != 0 {
		t.Errorf("status: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = h.run("dream", "restore", sha)
	if r.code != 0 || !strings.Contains(r.stdout, sha) {
		t.Fatalf("dream restore through the gateway: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if user, _ := os.ReadFile(filepath.Join(h.ws, "USER.md")); strings.Contains(string(user), "Prefers tea") {
		t.Errorf("USER.md still holds the undone line:\n%s", user)
	}
	if !strings.Contains(p.stderr.String(), `"command":"dream restore"`) {
		t.Errorf("the gateway did not run the restore; its log:\n%s", p.stderr.String())
	}
	notTheirs(t, h.home, uid)

	if !p.stop(20 * time.Second) {
		t.Fatal("the gateway did not stop")
	}
	r = h.run("dream", "restore", sha)
	if r.code != 1 || !strings.Contains(r.stderr, "belongs to another account") {
		t.Errorf("dream restore without the gateway, as another account: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	oneSentence(t, r.stderr)
	notTheirs(t, h.home, uid)
}

// notTheirs fails for a file under root that uid does not own.
func notTheirs(t *testing.T, root string, uid int) {
	t.Helper()
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok && int(st.Uid) != uid {
				t.Errorf("%s belongs to uid %d, not the gateway's account", p, st.Uid)
			}
		}
		return nil
	})
}

// Another local account can neither use the running gateway's admin
// socket nor its files: its command says whose they are and changes
// nothing.
func TestAnotherAccountCannotUseTheAdminSocket(t *testing.T) {
	uid, gid := nobodyAccount(t)
	h := newHarness(t)
	p := h.startGateway(t)
	p.waitServing(t)
	p.stderr.WaitFor(t, "admin socket listening")
	// nobody may read the config and look into the home, not into the
	// state directory (owner-only, as the gateway keeps it).
	openHome(t, h)
	if err := os.Chmod(h.cfgPath, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(publicCopy(t), "--config", h.cfgPath, "status")
	cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: []uint32{}}}
	out, _ := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); code != 1 || !strings.Contains(string(out), "belongs to another account") {
		t.Errorf("status as nobody: exit %d\n%s", code, out)
	}
	oneSentence(t, string(out))
}
