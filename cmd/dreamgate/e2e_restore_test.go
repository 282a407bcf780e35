package main

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/channels/slack/fakeslack"
	"github.com/dreamgate/dreamgate/llm/llmtest"
	"github.com/dreamgate/dreamgate/memory/memline"
	"github.com/dreamgate/dreamgate/workspace"
)

// restoreWorld is a Slack workspace through its fake, the binary's gateway
// with the rule-following model: Bob, an admin, speaks in #general (the
// team's memory), Ana in her DM (her own and the team's).
type restoreWorld struct {
	h              *harness
	w              *slackWorld
	general, anaDM place
	team           audience.Scope
}

func newRestoreWorld(t *testing.T) *restoreWorld {
	h := newHarness(t)
	sl := fakeslack.New(fakeslack.Config{TeamID: "T1", Users: map[string]string{"UANA": "Ana", "UBOB": "Bob"}})
	t.Cleanup(sl.Close)
	h.set("channels.terminal.enabled", false)
	h.set("channels.slack", map[string]any{
		"enabled": true, "botToken": sl.BotToken(), "appToken": sl.AppToken(), "apiURL": sl.APIURL(), "replyInThread": false,
	})
	h.set("admins", []string{"slack:UBOB"})
	h.llm.SetResponder(llmtest.MemoryModel)
	gw := h.startGateway(t)
	gw.waitConnected(t, "slack")
	general := place{name: "#general", aud: audience.Audience{Kind: audience.Team, Platform: "slack", Team: "T1"}, key: "slack:CGENERAL"}
	anaDM := place{name: "Ana's DM", aud: audience.Audience{Kind: audience.Person, Platform: "slack", Team: "T1", Person: "UANA"}, key: "slack:DANA"}
	w := &slackWorld{sl: sl, gw: gw, users: map[string]string{general.key: "UBOB", anaDM.key: "UANA"},
		teams: map[string]string{general.key: "T1", anaDM.key: "T1"}}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("gateway log:\n%s", gw.stderr.String())
		}
	})
	return &restoreWorld{h: h, w: w, general: general, anaDM: anaDM, team: general.aud.Home()}
}

var commitRe = regexp.MustCompile(`commit ([0-9a-f]{8})`)

// dream tells p a fact and runs /dream there, returning the Dream commit.
func (rw *restoreWorld) dream(t *testing.T, p place, fact string) string {
	t.Helper()
	rw.w.say(t, p, fact)
	got := rw.w.say(t, p, "/dream")
	m := commitRe.FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("%s: /dream made no commit: %q", p.name, got)
	}
	return m[1]
}

func (rw *restoreWorld) file(t *testing.T, rel string) string {
	t.Helper()
	return string(readMemoryFile(t, rw.h.ws, path.Join(rw.team.Dir(), rel)))
}

// write edits the team's file by hand (on PostgreSQL with `dreamgate
// memory edit`, which commits it).
func (rw *restoreWorld) write(t *testing.T, rel, text string) {
	t.Helper()
	writeMemory(t, rw.h, rw.team, rel, text)
}

// Undoing a Dream that changed the team's USER.md changes that file alone,
// and there only the Dream's line: a hand-written COLD.md and a line added
// by hand to MEMORY.md of the same scope stay, and the reply names the file
// and the line. Where a later change rewrote a Dream's line, the reply
// shows both and changes nothing until the person chooses. A restore and a
// commit of hand edits can be undone too.
func TestRestoreUndoesOnlyItsChangeThroughSlack(t *testing.T) {
	rw := newRestoreWorld(t)
	const said = "I work at the harbour office."
	t1 := rw.dream(t, rw.general, said)
	if !strings.Contains(rw.file(t, "USER.md"), "harbour office") {
		t.Fatalf("the team's USER.md after the Dream:\n%s", rw.file(t, "USER.md"))
	}
	const cold, handLine = "- An old plan, written here by hand.\n", "- Parking is behind the office, added by hand.\n"
	rw.write(t, "memory/COLD.md", cold)
	memory := rw.file(t, "memory/MEMORY.md") + handLine
	rw.write(t, "memory/MEMORY.md", memory)

	// On PostgreSQL each hand edit was committed as it was made (memory
	// edit): none is left to save first.
	_, onPG := pgWorkspaces.Load(rw.h.ws)
	got := rw.w.say(t, rw.general, "/dream-restore "+t1)
	if !strings.HasPrefix(got, "Undid `"+t1+"`") || !strings.Contains(got, "USER.md: 1 line taken out") ||
		!strings.Contains(got, said) || strings.Contains(got, "COLD.md") || strings.Contains(got, "MEMORY.md") ||
		onPG == strings.Contains(got, "Edits made by hand since the last commit were saved first") {
		t.Errorf("/dream-restore %s answered:\n%s", t1, got)
	}
	if strings.Contains(rw.file(t, "USER.md"), "harbour office") {
		t.Errorf("the Dream's line is still in USER.md:\n%s", rw.file(t, "USER.md"))
	}
	if got := rw.file(t, "memory/COLD.md"); got != cold {
		t.Errorf("the hand-written COLD.md after the restore: %q", got)
	}
	if got := rw.file(t, "memory/MEMORY.md"); got != memory {
		t.Errorf("MEMORY.md after the restore: %q, want the hand-added line kept", got)
	}
	if problems := checkFsck(rw.h.ws); len(problems) > 0 {
		t.Error(problems)
	}
	if _, err := os.Stat(filepath.Join(rw.h.ws, ".git")); err == nil {
		// The team's memory has a line of history of its own.
		if stat := gitCLI(t, rw.h.ws, "show", "--stat", "--format=%s", "refs/"+rw.team.Dir()); strings.Count(stat, "|") != 1 || !strings.Contains(stat, "USER.md") {
			t.Errorf("the revert commit:\n%s", stat)
		}
	}

	// A later change rewrote the line a Dream added: nothing is changed
	// until the person chooses; "all" takes the rewritten line out too.
	t2 := rw.dream(t, rw.general, "I live near the old harbour.")
	user := strings.Replace(rw.file(t, "USER.md"), "I live near the old harbour.", "I live near the new harbour.", 1)
	rw.write(t, "USER.md", user)
	got = rw.w.say(t, rw.general, "/dream-restore "+t2)
	if !strings.Contains(got, "needs your choice") || !strings.Contains(got, "now:    - I live near the new harbour.") ||
		!strings.Contains(got, "/dream-restore "+t2+" all") || rw.file(t, "USER.md") != user {
		t.Errorf("/dream-restore %s of a rewritten line answered:\n%s", t2, got)
	}
	if got := rw.w.say(t, rw.general, "/dream-restore "+t2+" all"); !strings.Contains(got, "those were undone too") ||
		strings.Contains(rw.file(t, "USER.md"), "harbour") {
		t.Errorf("/dream-restore %s all answered:\n%s\nUSER.md:\n%s", t2, got, rw.file(t, "USER.md"))
	}

	// The list offers the restores and the hand edits; undoing the first
	// restore brings its Dream's line back, undoing the hand edits takes
	// them out.
	// (Newest first: the hand edits the first restore saved are listed
	// right after it.)
	list := rw.w.say(t, rw.general, "/dream-restore")
	m := regexp.MustCompile("`([0-9a-f]{8})` [^\n]* revert: undo " + t1 + "\n[^`]*`([0-9a-f]{8})` [^\n]* manual: edits outside Dream").FindStringSubmatch(list)
	if m == nil {
		t.Fatalf("/dream-restore lists:\n%s", list)
	}
	if got := rw.w.say(t, rw.general, "/dream-restore "+m[1]); !strings.HasPrefix(got, "Undid") || !strings.Contains(rw.file(t, "USER.md"), "harbour office") {
		t.Errorf("undoing the restore answered:\n%s\nUSER.md:\n%s", got, rw.file(t, "USER.md"))
	}
	// (On PostgreSQL the hand edits are two commits, MEMORY.md's the newer.)
	if got := rw.w.say(t, rw.general, "/dream-restore "+m[2]); !onPG && !strings.Contains(got, "(the file goes") ||
		!onPG && rw.file(t, "memory/COLD.md") != "" || strings.Contains(rw.file(t, "memory/MEMORY.md"), "Parking") {
		t.Errorf("undoing the hand edits answered:\n%s", got)
	}
	if problems := checkFsck(rw.h.ws); len(problems) > 0 {
		t.Error(problems)
	}
}

// After an admin undid a team Dream, Ana's own Dream, made in her DM and
// never undone, is not called undone: not by /dream-log in her DM, not by
// `dreamgate dream log`, not by `dreamgate status`. The team's Dream is.
func TestUndoneByOnlyOfWhatARestoreUndidThroughSlack(t *testing.T) {
	rw := newRestoreWorld(t)
	team := rw.dream(t, rw.general, "I work at the harbour office.")
	ana := rw.dream(t, rw.anaDM, "FACT: Ana salary band is K7Q2Z9.")
	if got := rw.w.say(t, rw.general, "/dream-restore "+team); !strings.Contains(got, "`"+team+"`") || !strings.Contains(got, "new commit") ||
		strings.Contains(got, "by hand") {
		t.Fatalf("the team's restore answered:\n%s", got)
	}
	got := rw.w.say(t, rw.anaDM, "/dream-log")
	if !strings.Contains(got, ana) || strings.Contains(got, "undone") || !strings.Contains(got, "Undo it with /dream-restore "+ana) {
		t.Errorf("Ana's /dream-log of her own Dream:\n%s", got)
	}
	r := rw.h.run("dream", "log")
	if r.code != 0 || !strings.Contains(r.stdout, ana) || strings.Contains(r.stdout, "undone") {
		t.Errorf("dream log: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = rw.h.run("status")
	if !strings.Contains(r.stdout, "Last Dream commit: "+ana) || strings.Contains(r.stdout, "undone by") {
		t.Errorf("status:\n%s", r.stdout)
	}
	// The team's Dream is undone, and says by what.
	r = rw.h.run("dream", "log", team)
	if r.code != 0 || !strings.Contains(r.stdout, "Already undone by `") {
		t.Errorf("dream log %s: exit %d\n%s%s", team, r.code, r.stdout, r.stderr)
	}
}

// A restored deep Dream holds: after the restore brought every line back
// to hot memory (and out of cold memory), the next Dreams — one asked for
// by a prompt over budget, one with something new to read — leave them
// there, and the restore's reply said they would.
func TestRestoredDeepDreamHoldsThroughTheBinary(t *testing.T) {
	h := newHarness(t)
	h.set("memory.hotTokens", 1000)
	h.llm.SetResponder(llmtest.MemoryModel)
	var b strings.Builder
	b.WriteString("# User\n\n- Ana wants answers in Portuguese. <!-- permanent 2025-01-01 -->\n")
	const facts = 150
	for i := range facts {
		fmt.Fprintf(&b, "- Ana's project P%03d is called Heron%03d. <!-- durable 2026-%02d-01 src:%d -->\n", i, i, 1+i%11, i+1)
	}
	if err := os.MkdirAll(h.ws, 0o700); err != nil {
		t.Fatal(err)
	}
	// Written before the first run: on PostgreSQL it is the memory
	// repository's first commit.
	if err := os.WriteFile(filepath.Join(h.ws, "USER.md"), []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	hotFacts := func() (hot, cold int) {
		hf, cf := readMemoryFile(t, h.ws, "USER.md"), readMemoryFile(t, h.ws, workspace.Cold)
		return len(memline.ParseFile(hf).Facts()), len(memline.ParseFile(cf).Facts())
	}
	if r := h.run("chat", "-m", "Hello there."); r.code != 0 {
		t.Fatalf("chat: exit %d: %s", r.code, r.stderr)
	}
	if r := h.run("dream", "run"); r.code != 0 || !strings.Contains(r.stdout, "Deep Dream:") {
		t.Fatalf("dream run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, cold := hotFacts(); cold == 0 {
		t.Fatal("the deep Dream moved nothing to cold memory")
	}
	deep := regexp.MustCompile("`([0-9a-f]{8})`").FindStringSubmatch(h.run("dream", "log").stdout)
	if deep == nil {
		t.Fatal("no deep Dream commit in dream log")
	}
	r := h.run("dream", "restore", deep[1])
	if r.code != 0 {
		t.Fatalf("dream restore %s: exit %d\n%s\n%s", deep[1], r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "it will not be compacted again until it grows past") {
		t.Errorf("the restore's reply does not say the scope holds:\n%s", r.stdout)
	}
	if hot, cold := hotFacts(); hot != facts+1 || cold != 0 {
		t.Fatalf("after the restore: %d lines hot, %d cold; want all %d hot", hot, cold, facts+1)
	}

	// A prompt over budget asks again, and the next Dream makes none.
	if r := h.run("chat", "-m", "Hello again."); r.code != 0 {
		t.Fatalf("chat: exit %d: %s", r.code, r.stderr)
	}
	r = h.run("dream", "run")
	if r.code != 0 || strings.Contains(r.stdout, "Deep Dream:") {
		t.Errorf("the Dream after the restore: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	// Something new to read: a batch, and still no deep Dream.
	h.llm.Push(llmtest.Text("Noted."))
	if r := h.run("chat", "-m", "Ana's project P900 is called Egret900."); r.code != 0 {
		t.Fatalf("chat: exit %d: %s", r.code, r.stderr)
	}
	if r := h.run("chat", "-m", "/new"); r.code != 0 {
		t.Fatalf("/new: exit %d: %s", r.code, r.stderr)
	}
	r = h.run("dream", "run")
	if r.code != 0 || strings.Contains(r.stdout, "Deep Dream:") || !strings.Contains(r.stdout, "USER.md") && !strings.Contains(r.stdout, "MEMORY.md") {
		t.Errorf("the Dream with news after the restore: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if hot, cold := hotFacts(); hot < facts+1 || cold != 0 {
		t.Errorf("after the next Dreams: %d lines hot, %d cold; want the restored %d still hot", hot, cold, facts+1)
	}
}
