package eval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/dreamgate/dreamgate/audience"
)

// Parse reads one file's scenarios: a JSON object, or a list of them. file
// names the source in errors.
func Parse(file string, data []byte) ([]Scenario, error) {
	var raws []json.RawMessage
	trimmed := bytes.TrimSpace(data)
	switch {
	case len(trimmed) == 0:
		return nil, &ScenarioError{File: file, Msg: "is empty; it should hold a scenario object or a list of them"}
	case trimmed[0] == '[':
		if err := json.Unmarshal(trimmed, &raws); err != nil {
			return nil, syntaxError(file, trimmed, err)
		}
		if len(raws) == 0 {
			return nil, &ScenarioError{File: file, Msg: "holds an empty list of scenarios"}
		}
	default:
		var one json.RawMessage
		if err := json.Unmarshal(trimmed, &one); err != nil {
			return nil, syntaxError(file, trimmed, err)
		}
		raws = []json.RawMessage{one}
	}
	out := make([]Scenario, 0, len(raws))
	for i, raw := range raws {
		p := &parser{file: file, scenario: fmt.Sprintf("#%d", i+1)}
		sc, err := p.parseScenario(raw)
		if err != nil {
			return nil, err
		}
		sc.Source = file
		out = append(out, sc)
	}
	return out, nil
}

func syntaxError(file string, data []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line := 1 + bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))
		return &ScenarioError{File: file, Msg: fmt.Sprintf("is not valid JSON (line %d): %v", line, se)}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &ScenarioError{File: file, Msg: "should hold a scenario object or a list of them, not a JSON " + te.Value}
	}
	return &ScenarioError{File: file, Msg: "is not valid JSON: " + err.Error()}
}

// parser decodes one scenario by hand, so an error can name the exact
// field, and an unknown field (a typo such as "expected") is refused rather
// than silently ignored.
type parser struct {
	file, scenario string
}

func (p *parser) errf(field, format string, args ...any) error {
	return &ScenarioError{File: p.file, Scenario: p.scenario, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// object decodes an object and refuses keys outside allowed.
func (p *parser) object(field string, raw json.RawMessage, allowed ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, p.errf(field, "should be a JSON object")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(allowed, k) {
			return nil, p.errf(join(field, k), "is not a known field (known: %s)", strings.Join(allowed, ", "))
		}
	}
	return m, nil
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func (p *parser) str(field string, raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", p.errf(field, "should be a string")
	}
	return s, nil
}

func (p *parser) list(field string, raw json.RawMessage) ([]json.RawMessage, error) {
	var l []json.RawMessage
	if err := json.Unmarshal(raw, &l); err != nil {
		return nil, p.errf(field, "should be a list")
	}
	return l, nil
}

func (p *parser) parseScenario(raw json.RawMessage) (Scenario, error) {
	var sc Scenario
	// The name first, so that every later error can name the scenario.
	var named struct {
		Name any `json:"name"`
	}
	if json.Unmarshal(raw, &named) == nil {
		if n, ok := named.Name.(string); ok && strings.TrimSpace(n) != "" {
			p.scenario = strings.TrimSpace(n)
		}
	}
	m, err := p.object("", raw, "name", "description", "sessions", "expect", "questions", "files", "contextWindow")
	if err != nil {
		return sc, err
	}
	if v, ok := m["name"]; ok {
		if sc.Name, err = p.str("name", v); err != nil {
			return sc, err
		}
	}
	sc.Name = strings.TrimSpace(sc.Name)
	if sc.Name == "" {
		return sc, p.errf("name", "is missing; every scenario needs a name")
	}
	p.scenario = sc.Name
	if v, ok := m["description"]; ok {
		if sc.Description, err = p.str("description", v); err != nil {
			return sc, err
		}
	}
	if sc.Sessions, err = p.sessions(m["sessions"]); err != nil {
		return sc, err
	}
	if v, ok := m["expect"]; ok {
		if sc.Expect, err = p.expects(v); err != nil {
			return sc, err
		}
	}
	if v, ok := m["questions"]; ok {
		if sc.Questions, err = p.questions(v); err != nil {
			return sc, err
		}
	}
	if len(sc.Expect) == 0 && len(sc.Questions) == 0 {
		return sc, p.errf("expect", "is missing; a scenario needs at least one expect or question to check")
	}
	if v, ok := m["files"]; ok {
		if sc.Files, err = p.files(v); err != nil {
			return sc, err
		}
	}
	if v, ok := m["contextWindow"]; ok {
		if err := json.Unmarshal(v, &sc.ContextWindow); err != nil || sc.ContextWindow < minContextWindow {
			return sc, p.errf("contextWindow", "should be a whole number of tokens, at least %d", minContextWindow)
		}
	}
	return sc, nil
}

func (p *parser) sessions(raw json.RawMessage) ([]Session, error) {
	if raw == nil {
		return nil, p.errf("sessions", "is missing; a scenario needs at least one session")
	}
	l, err := p.list("sessions", raw)
	if err != nil {
		return nil, err
	}
	if len(l) == 0 {
		return nil, p.errf("sessions", "is empty; a scenario needs at least one session")
	}
	out := make([]Session, 0, len(l))
	for i, r := range l {
		field := fmt.Sprintf("sessions[%d]", i)
		m, err := p.object(field, r, "key", "sender", "audience", "turns")
		if err != nil {
			return nil, err
		}
		var s Session
		if v, ok := m["audience"]; ok {
			if s.Audience, err = p.audience(field+".audience", v); err != nil {
				return nil, err
			}
		}
		if v, ok := m["key"]; ok {
			if s.Key, err = p.str(field+".key", v); err != nil {
				return nil, err
			}
		}
		switch {
		case s.Key == "":
			return nil, p.errf(field+".key", "is missing; name the conversation, e.g. \"alice-dm\"")
		case strings.ContainsFunc(s.Key, func(r rune) bool { return r <= ' ' || r == '/' || r == '\\' }):
			return nil, p.errf(field+".key", "%q should have no spaces or slashes", s.Key)
		case strings.HasPrefix(s.Key, ":") || strings.HasSuffix(s.Key, ":"):
			return nil, p.errf(field+".key", "%q should be a name or channel:name", s.Key)
		}
		s.Sender = "user"
		if v, ok := m["sender"]; ok {
			if s.Sender, err = p.str(field+".sender", v); err != nil {
				return nil, err
			}
			if strings.TrimSpace(s.Sender) == "" {
				return nil, p.errf(field+".sender", "is empty; leave it out for \"user\"")
			}
		}
		if s.Turns, err = p.turns(field+".turns", m["turns"]); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

func (p *parser) turns(field string, raw json.RawMessage) ([]Turn, error) {
	if raw == nil {
		return nil, p.errf(field, "is missing; a session needs at least one turn")
	}
	l, err := p.list(field, raw)
	if err != nil {
		return nil, err
	}
	if len(l) == 0 {
		return nil, p.errf(field, "is empty; a session needs at least one turn")
	}
	out := make([]Turn, 0, len(l))
	for i, r := range l {
		f := fmt.Sprintf("%s[%d]", field, i)
		var t Turn
		if bytes.HasPrefix(bytes.TrimSpace(r), []byte("{")) {
			m, err := p.object(f, r, "text", "idle")
			if err != nil {
				return nil, err
			}
			if v, ok := m["text"]; ok {
				if t.Text, err = p.str(f+".text", v); err != nil {
					return nil, err
				}
			}
			if v, ok := m["idle"]; ok {
				if err := json.Unmarshal(v, &t.Idle); err != nil {
					return nil, p.errf(f+".idle", "should be true or false")
				}
			}
			f += ".text"
		} else if err := json.Unmarshal(r, &t.Text); err != nil {
			return nil, p.errf(f, "should be a string or {\"text\": \"…\", \"idle\": true}")
		}
		if strings.TrimSpace(t.Text) == "" {
			return nil, p.errf(f, "is empty; a turn is something the user says")
		}
		out = append(out, t)
	}
	return out, nil
}

func (p *parser) expects(raw json.RawMessage) ([]Expect, error) {
	l, err := p.list("expect", raw)
	if err != nil {
		return nil, err
	}
	out := make([]Expect, 0, len(l))
	for i, r := range l {
		field := fmt.Sprintf("expect[%d]", i)
		m, err := p.object(field, r, "audience", "file", "contains", "matches", "absent")
		if err != nil {
			return nil, err
		}
		var e Expect
		if v, ok := m["audience"]; ok {
			if e.Audience, err = p.audience(field+".audience", v); err != nil {
				return nil, err
			}
		}
		set := 0
		for _, k := range []struct {
			name string
			dst  *string
		}{{"file", &e.File}, {"contains", &e.Contains}, {"matches", &e.Matches}, {"absent", &e.Absent}} {
			v, ok := m[k.name]
			if !ok {
				continue
			}
			if *k.dst, err = p.str(field+"."+k.name, v); err != nil {
				return nil, err
			}
			if k.name != "file" {
				if strings.TrimSpace(*k.dst) == "" {
					return nil, p.errf(field+"."+k.name, "is empty")
				}
				set++
			}
		}
		if set != 1 {
			return nil, p.errf(field, "should have exactly one of contains, matches or absent (has %d)", set)
		}
		if e.File != "" {
			f, ok := memoryFile(e.File)
			if !ok {
				return nil, p.errf(field+".file", "%q is not a memory file; use USER.md, SOUL.md or memory/MEMORY.md, or leave it out for all three", e.File)
			}
			e.File = f
		}
		if e.Matches != "" {
			if e.re, err = regexp.Compile(e.Matches); err != nil {
				return nil, p.errf(field+".matches", "is not a valid regular expression: %v", err)
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// memoryFile normalises a file name of an expectation; "MEMORY.md" is taken
// for memory/MEMORY.md, the only file of that name.
func memoryFile(name string) (string, bool) {
	switch strings.TrimPrefix(name, "./") {
	case FileUser:
		return FileUser, true
	case FileSoul:
		return FileSoul, true
	case FileMemory, "MEMORY.md":
		return FileMemory, true
	}
	return "", false
}

func (p *parser) questions(raw json.RawMessage) ([]Question, error) {
	l, err := p.list("questions", raw)
	if err != nil {
		return nil, err
	}
	out := make([]Question, 0, len(l))
	for i, r := range l {
		field := fmt.Sprintf("questions[%d]", i)
		m, err := p.object(field, r, "audience", "ask", "expect", "absent")
		if err != nil {
			return nil, err
		}
		var q Question
		if v, ok := m["audience"]; ok {
			if q.Audience, err = p.audience(field+".audience", v); err != nil {
				return nil, err
			}
		}
		_, hasExpect := m["expect"]
		_, hasAbsent := m["absent"]
		switch {
		case !hasExpect && !hasAbsent:
			return nil, p.errf(field+".expect", "is missing (or give absent: what the answer must not say)")
		case hasExpect && hasAbsent:
			return nil, p.errf(field, "should have one of expect or absent, not both")
		}
		for _, k := range []struct {
			name string
			dst  *string
		}{{"ask", &q.Ask}, {"expect", &q.Expect}, {"absent", &q.Absent}} {
			v, ok := m[k.name]
			if !ok {
				if k.name == "ask" {
					return nil, p.errf(field+".ask", "is missing")
				}
				continue
			}
			if *k.dst, err = p.str(field+"."+k.name, v); err != nil {
				return nil, err
			}
			if strings.TrimSpace(*k.dst) == "" {
				return nil, p.errf(field+"."+k.name, "is empty")
			}
		}
		if strings.HasPrefix(strings.TrimSpace(q.Ask), "/") {
			return nil, p.errf(field+".ask", "starts with /, which the gateway takes for a command")
		}
		out = append(out, q)
	}
	return out, nil
}

// audience reads an audience in its text form ("slack/person/T1/U2").
func (p *parser) audience(field string, raw json.RawMessage) (audience.Audience, error) {
	s, err := p.str(field, raw)
	if err != nil {
		return audience.Audience{}, err
	}
	a, err := audience.ParseAudience(s)
	if err != nil {
		return audience.Audience{}, p.errf(field, "%q is not an audience: write platform/kind[/team[/id]], e.g. \"slack/person/T1/U2\", \"slack/team/T1\", \"slack/private/T1/C2\" or \"discord/person//U2\"", s)
	}
	return a, nil
}

func (p *parser) files(raw json.RawMessage) (map[string]string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, p.errf("files", "should be an object of workspace path -> content")
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // the first bad name is the same every time
	out := make(map[string]string, len(m))
	for _, k := range keys {
		field := fmt.Sprintf("files[%q]", k)
		clean := path.Clean(k)
		switch {
		case strings.ContainsFunc(k, func(r rune) bool { return r < 0x20 || r == 0x7f }):
			return nil, p.errf(field, "has a control character in its name")
		case k == "" || path.IsAbs(k) || strings.Contains(k, "\\") || clean != k ||
			clean == ".." || strings.HasPrefix(clean, "../"):
			return nil, p.errf(field, "should be a plain relative path inside the workspace")
		case len(k) > maxSeedName || slices.ContainsFunc(strings.Split(k, "/"), func(c string) bool { return len(c) > maxSeedComponent }):
			return nil, p.errf(field, "is too long a name (at most %d bytes a path, %d a part of it)", maxSeedName, maxSeedComponent)
		case clean == ".git" || strings.HasPrefix(clean, ".git/") ||
			clean == "memory" || strings.HasPrefix(clean, "memory/") && clean != FileMemory:
			return nil, p.errf(field, "is kept by dreamgate itself; a scenario cannot seed it")
		}
		var s string
		if err := json.Unmarshal(m[k], &s); err != nil {
			return nil, p.errf(field, "should be the file's text as a string")
		}
		if len(s) > MaxSeedBytes {
			return nil, p.errf(field, "is larger than %d MiB", MaxSeedBytes>>20)
		}
		out[k] = s
	}
	// A file cannot also be a folder of another ("notes" and "notes/a").
	for _, k := range keys {
		for dir := path.Dir(k); dir != "."; dir = path.Dir(dir) {
			if _, ok := out[dir]; ok {
				return nil, p.errf(fmt.Sprintf("files[%q]", k), "is inside %q, which is seeded as a file", dir)
			}
		}
	}
	return out, nil
}
