//go:build unix

package main

import (
	"bytes"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/llm/llmtest"
)

// runUmask runs dreamgate with the harness config under a shell's umask,
// as a user's login shell would start it.
func (h *harness) runUmask(umask string, args ...string) runResult {
	h.t.Helper()
	cmd := exec.Command("/bin/sh", append([]string{"-c", "umask " + umask + ` && exec "$0" "$@"`, binPath, "--config", h.cfgPath}, args...)...)
	cmd.Env = []string{"HOME=" + h.home, "PATH=" + os.Getenv("PATH"), "TZ=UTC"}
	cmd.Stdin = strings.NewReader("")
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := err.(*exec.ExitError); err != nil && !ok {
		h.t.Fatalf("running dreamgate: %v", err)
	}
	return runResult{stdout: out.String(), stderr: errb.String(), code: cmd.ProcessState.ExitCode()}
}

// openToOthers lists what below dirs gives the group or others any
// permission. The git objects go-git makes read-only for all (0444) are
// not listed when every directory above them is owner-only, which the
// walk checks too.
func openToOthers(t *testing.T, dirs ...string) []string {
	t.Helper()
	var open []string
	for _, dir := range dirs {
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			info, err := d.Info()
			if err != nil || d.Type()&fs.ModeSymlink != 0 {
				return err
			}
			perm := info.Mode().Perm()
			if perm&0o077 == 0 || gitObject(dir, p, info) {
				return nil
			}
			open = append(open, p+" "+perm.String())
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return open
}

// Under umask 022 the workspace, the state directory and every file in
// them are owner-only, whichever command comes first; status creates
// nothing.
func TestWorkspaceAndStateAreOwnerOnly(t *testing.T) {
	for _, first := range [][]string{{"status"}, {"chat", "-m", "hi"}, {"dream", "log"}} {
		t.Run(strings.Join(first, " "), func(t *testing.T) {
			h := newHarness(t)
			h.llm.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("hello") })
			r := h.runUmask("022", first...)
			if first[0] == "status" {
				if r.code != 0 {
					t.Fatalf("status: exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
				if _, err := os.Stat(h.ws); !os.IsNotExist(err) {
					t.Errorf("status created the workspace (%v)", err)
				}
				if !strings.Contains(r.stdout, "not created yet") {
					t.Errorf("status does not say the workspace is not there yet:\n%s", r.stdout)
				}
				r = h.runUmask("022", "chat", "-m", "hi")
			}
			if r.code != 0 && first[0] != "dream" { // no Dream yet: exit 1
				t.Fatalf("%v: exit %d\n%s%s", first, r.code, r.stdout, r.stderr)
			}
			if r := h.runUmask("022", "chat", "-m", "again"); r.code != 0 {
				t.Fatalf("chat: exit %d\n%s", r.code, r.stderr)
			}
			made := []string{h.ws, h.state, filepath.Join(h.ws, "memory", "MEMORY.md"), filepath.Join(h.ws, ".git")}
			if _, ok := pgWorkspaces.Load(h.ws); ok {
				made = made[:2] // the memory and its repository are the database's
			}
			for _, p := range made {
				if _, err := os.Stat(p); err != nil {
					t.Fatalf("%s missing after a chat: %v", p, err)
				}
			}
			if open := openToOthers(t, h.ws, h.state); len(open) > 0 {
				t.Errorf("open to others:\n%s", strings.Join(open, "\n"))
			}
		})
	}
}

// A workspace and state directory an earlier version left open to others
// are made owner-only at start, and the log says so once.
func TestOpenModesAreTightenedAtStart(t *testing.T) {
	h := newHarness(t)
	h.llm.SetResponder(func(llmtest.Request) llmtest.Reply { return llmtest.Text("hello") })
	if r := h.runUmask("022", "chat", "-m", "hi"); r.code != 0 {
		t.Fatalf("chat: exit %d\n%s", r.code, r.stderr)
	}
	loosen := map[string]fs.FileMode{
		h.ws: 0o755, h.state: 0o755, filepath.Join(h.ws, "memory"): 0o755,
		filepath.Join(h.ws, "memory", "MEMORY.md"): 0o644, filepath.Join(h.ws, "SOUL.md"): 0o664,
		filepath.Join(h.ws, ".git", "HEAD"): 0o644, sessionsDir(h.state): 0o755,
	}
	entries, err := os.ReadDir(sessionsDir(h.state))
	if err != nil || len(entries) == 0 {
		t.Fatalf("no session files: %v", err)
	}
	for _, e := range entries {
		loosen[filepath.Join(sessionsDir(h.state), e.Name())] = 0o644
	}
	for p, m := range loosen {
		if err := os.Chmod(p, m); err != nil {
			t.Fatal(err)
		}
	}
	r := h.runUmask("022", "status")
	if r.code != 0 || !strings.Contains(r.stderr, "owner-only") || !strings.Contains(r.stderr, `"changed":`+strconv.Itoa(len(loosen))) {
		t.Errorf("status: exit %d; want a log line counting %d changes:\n%s", r.code, len(loosen), r.stderr)
	}
	if open := openToOthers(t, h.ws, h.state); len(open) > 0 {
		t.Errorf("still open to others:\n%s", strings.Join(open, "\n"))
	}
	if r := h.runUmask("022", "status"); strings.Contains(r.stderr, "owner-only") {
		t.Errorf("the second start changed modes again:\n%s", r.stderr)
	}
}
