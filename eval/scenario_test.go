package eval

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const good = `{"name": "moves",
 "sessions": [
   {"key": "alice-dm", "sender": "alice", "turns": ["Hi, I'm Alice, I live in Lisbon.", {"text": "Back later.", "idle": true}]},
   {"key": "slack:C1", "turns": ["hello"]}],
 "expect": [
   {"file": "USER.md", "contains": "Porto"},
   {"file": "MEMORY.md", "matches": "(?i)alice.*porto"},
   {"file": "USER.md", "absent": "Lisbon"},
   {"absent": "Mars"}],
 "questions": [{"ask": "Where does Alice live?", "expect": "Porto"}],
 "files": {"notes/a.txt": "x"},
 "contextWindow": 8192}`

func TestParseGood(t *testing.T) {
	scs, err := Parse("f.json", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	sc := scs[0]
	if sc.Name != "moves" || sc.Source != "f.json" || len(sc.Sessions) != 2 || sc.ContextWindow != 8192 {
		t.Fatalf("%+v", sc)
	}
	s0, s1 := sc.Sessions[0], sc.Sessions[1]
	if s0.SessionKey() != "eval:alice-dm" || s0.Channel() != "eval" || s0.Sender != "alice" {
		t.Errorf("session 0: %q %q %q", s0.SessionKey(), s0.Channel(), s0.Sender)
	}
	if s1.SessionKey() != "slack:C1" || s1.Channel() != "slack" || s1.Sender != "user" {
		t.Errorf("session 1: %q %q %q", s1.SessionKey(), s1.Channel(), s1.Sender)
	}
	if s0.Turns[0].Idle || !s0.Turns[1].Idle || s0.Turns[1].Text != "Back later." {
		t.Errorf("turns: %+v", s0.Turns)
	}
	if sc.Expect[1].File != FileMemory || sc.Expect[1].re == nil {
		t.Errorf("MEMORY.md is memory/MEMORY.md, with its regexp compiled: %+v", sc.Expect[1])
	}
	// A list of scenarios parses too.
	if scs, err := Parse("l.json", []byte("["+good+"]")); err != nil || len(scs) != 1 {
		t.Errorf("list: %v %d", err, len(scs))
	}
}

func TestParseNamesFileScenarioAndField(t *testing.T) {
	sess := `"sessions": [{"key": "a", "turns": ["hi"]}]`
	exp := `"expect": [{"absent": "x"}]`
	cases := []struct {
		name, body, scenario, field, msg string
	}{
		{"syntax", `{"name": "x",`, "", "", "not valid JSON (line 1)"},
		{"not an object", `"hello"`, "#1", "", "should be a JSON object"},
		{"empty list", `[]`, "", "", "empty list"},
		{"unknown top field", `{"name": "s", ` + sess + `, "expected": [], ` + exp + `}`, "s", "expected", "not a known field"},
		{"no name", `{` + sess + `, ` + exp + `}`, "#1", "name", "is missing"},
		{"second of a list unnamed", `[{"name": "a", ` + sess + `, ` + exp + `}, {` + sess + `}]`, "#2", "name", "is missing"},
		{"no sessions", `{"name": "s", ` + exp + `}`, "s", "sessions", "is missing"},
		{"empty sessions", `{"name": "s", "sessions": [], ` + exp + `}`, "s", "sessions", "is empty"},
		{"no key", `{"name": "s", "sessions": [{"turns": ["hi"]}], ` + exp + `}`, "s", "sessions[0].key", "is missing"},
		{"key with space", `{"name": "s", "sessions": [{"key": "a b", "turns": ["hi"]}], ` + exp + `}`, "s", "sessions[0].key", "no spaces"},
		{"no turns", `{"name": "s", "sessions": [{"key": "a"}], ` + exp + `}`, "s", "sessions[0].turns", "is missing"},
		{"empty turn", `{"name": "s", "sessions": [{"key": "a", "turns": ["hi", " "]}], ` + exp + `}`, "s", "sessions[0].turns[1]", "is empty"},
		{"turn typo", `{"name": "s", "sessions": [{"key": "a", "turns": [{"text": "x", "idel": true}]}], ` + exp + `}`, "s", "sessions[0].turns[0].idel", "not a known field"},
		{"turn idle not bool", `{"name": "s", "sessions": [{"key": "a", "turns": [{"text": "x", "idle": "yes"}]}], ` + exp + `}`, "s", "sessions[0].turns[0].idle", "true or false"},
		{"turn number", `{"name": "s", "sessions": [{"key": "a", "turns": [3]}], ` + exp + `}`, "s", "sessions[0].turns[0]", "should be a string"},
		{"nothing to check", `{"name": "s", ` + sess + `}`, "s", "expect", "at least one expect or question"},
		{"two kinds", `{"name": "s", ` + sess + `, "expect": [{"contains": "a", "absent": "b"}]}`, "s", "expect[0]", "exactly one of"},
		{"no kind", `{"name": "s", ` + sess + `, "expect": [{"file": "USER.md"}]}`, "s", "expect[0]", "exactly one of"},
		{"bad file", `{"name": "s", ` + sess + `, "expect": [{"file": "AGENTS.md", "contains": "a"}]}`, "s", "expect[0].file", "not a memory file"},
		{"bad regexp", `{"name": "s", ` + sess + `, "expect": [{"matches": "(a"}]}`, "s", "expect[0].matches", "not a valid regular expression"},
		{"question without expect", `{"name": "s", ` + sess + `, "questions": [{"ask": "where?"}]}`, "s", "questions[0].expect", "is missing"},
		{"question is a command", `{"name": "s", ` + sess + `, "questions": [{"ask": "/new", "expect": "x"}]}`, "s", "questions[0].ask", "command"},
		{"file escapes", `{"name": "s", ` + sess + `, ` + exp + `, "files": {"../x": "y"}}`, "s", `files["../x"]`, "relative path"},
		{"file in .git", `{"name": "s", ` + sess + `, ` + exp + `, "files": {".git/config": "y"}}`, "s", `files[".git/config"]`, "kept by dreamgate"},
		{"history seeded", `{"name": "s", ` + sess + `, ` + exp + `, "files": {"memory/history.jsonl": "y"}}`, "s", `files["memory/history.jsonl"]`, "kept by dreamgate"},
		{"NUL in a file name", `{"name": "s", ` + sess + `, ` + exp + `, "files": {"a\u0000b": "y"}}`, "s", `files["a\x00b"]`, "control character"},
		{"file name too long", `{"name": "s", ` + sess + `, ` + exp + `, "files": {"` + strings.Repeat("n", 300) + `": "y"}}`, "s", `files["` + strings.Repeat("n", 300) + `"]`, "too long"},
		{"file named memory", `{"name": "s", ` + sess + `, ` + exp + `, "files": {"memory": "y"}}`, "s", `files["memory"]`, "kept by dreamgate"},
		{"file inside a seeded file", `{"name": "s", ` + sess + `, ` + exp + `, "files": {"notes": "y", "notes/a": "z"}}`, "s", `files["notes/a"]`, "seeded as a file"},
		{"seeded file too big", `{"name": "s", ` + sess + `, ` + exp + `, "files": {"big.txt": "` + strings.Repeat("x", MaxSeedBytes+1) + `"}}`, "s", `files["big.txt"]`, "larger than 1 MiB"},
		{"tiny window", `{"name": "s", ` + sess + `, ` + exp + `, "contextWindow": 100}`, "s", "contextWindow", "at least 4096"},
		{"session audience not one", `{"name": "s", "sessions": [{"key": "a", "audience": "slack/team", "turns": ["hi"]}], ` + exp + `}`, "s", "sessions[0].audience", "is not an audience"},
		{"session audience not a string", `{"name": "s", "sessions": [{"key": "a", "audience": 3, "turns": ["hi"]}], ` + exp + `}`, "s", "sessions[0].audience", "should be a string"},
		{"expect audience lowercase id", `{"name": "s", ` + sess + `, "expect": [{"audience": "slack/team/t 1", "contains": "a"}]}`, "s", "expect[0].audience", "is not an audience"},
		{"question with both", `{"name": "s", ` + sess + `, "questions": [{"ask": "where?", "expect": "x", "absent": "y"}]}`, "s", "questions[0]", "not both"},
		{"question audience", `{"name": "s", ` + sess + `, "questions": [{"ask": "where?", "absent": "y", "audience": "x"}]}`, "s", "questions[0].audience", "is not an audience"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse("bad.json", []byte(tc.body))
			var se *ScenarioError
			if !errors.As(err, &se) {
				t.Fatalf("want a *ScenarioError, got %v", err)
			}
			if se.File != "bad.json" || se.Scenario != tc.scenario || se.Field != tc.field || !strings.Contains(se.Msg, tc.msg) {
				t.Errorf("got file %q scenario %q field %q msg %q; want scenario %q field %q msg ~%q",
					se.File, se.Scenario, se.Field, se.Msg, tc.scenario, tc.field, tc.msg)
			}
			if !strings.HasPrefix(err.Error(), "bad.json") {
				t.Errorf("the message does not start with the file: %s", err)
			}
		})
	}
}

func TestLoadDirectoryAndDuplicates(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("b.json", strings.Replace(good, `"moves"`, `"second"`, 1))
	write("a.json", good)
	write("notes.txt", "not a scenario")
	scs, err := Load(t.Context(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(scs) != 2 || scs[0].Name != "moves" || scs[1].Name != "second" {
		t.Fatalf("want a.json's then b.json's scenario, got %d", len(scs))
	}
	write("c.json", good)
	_, err = Load(t.Context(), dir)
	var se *ScenarioError
	if !errors.As(err, &se) || se.Field != "name" || !strings.HasSuffix(se.File, "c.json") || !strings.Contains(se.Msg, "a.json") {
		t.Errorf("a duplicate name should be refused naming both files: %v", err)
	}
	if _, err := Load(t.Context(), filepath.Join(dir, "missing.json")); !errors.As(err, &se) {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := Load(t.Context(), t.TempDir()); !errors.As(err, &se) || !strings.Contains(se.Msg, "no *.json") {
		t.Errorf("an empty directory: %v", err)
	}
}

func TestBuiltinScenarios(t *testing.T) {
	scs, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	if len(scs) < 12 {
		t.Fatalf("%d built-in scenarios, the issue asks for at least 12", len(scs))
	}
	var files = map[string]bool{}
	var idle, tools, channels, window, fileless, questions bool
	for _, sc := range scs {
		if sc.Description == "" {
			t.Errorf("%s: no description", sc.Name)
		}
		for _, e := range sc.Expect {
			files[e.File] = true
			fileless = fileless || e.File == "" && e.Absent != ""
		}
		keys := map[string]bool{}
		for _, s := range sc.Sessions {
			keys[s.Channel()] = true
			for _, t := range s.Turns {
				idle = idle || t.Idle
			}
		}
		channels = channels || len(keys) > 1
		tools = tools || len(sc.Files) > 0
		window = window || sc.ContextWindow > 0
		questions = questions || len(sc.Questions) > 0
	}
	for _, f := range MemoryFiles {
		if !files[f] {
			t.Errorf("no built-in scenario checks %s", f)
		}
	}
	if !idle || !tools || !channels || !window || !fileless || !questions {
		t.Errorf("coverage: idle %v, tool files %v, several channels %v, small window %v, absent anywhere %v, questions %v",
			idle, tools, channels, window, fileless, questions)
	}
}

// A scenario file is read up to MaxScenarioBytes and no further: an endless
// one (/dev/zero) fails at once.
func TestLoadRefusesAnOversizeFile(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big.json")
	if err := os.WriteFile(big, []byte(good[:len(good)-1]+`, "description": "`+strings.Repeat("x", MaxScenarioBytes)+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{big, "/dev/zero"} {
		if _, err := os.Stat(p); err != nil {
			t.Logf("%s: %v", p, err)
			continue
		}
		_, err := Load(t.Context(), p)
		var se *ScenarioError
		if !errors.As(err, &se) || !strings.Contains(se.Msg, "larger than 4 MiB") {
			t.Errorf("%s: %v; want a scenario error saying it is too large", p, err)
		}
	}
}
