package eval

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Memory files, workspace-relative: the files Dream edits and the checks
// read.
const (
	FileSoul   = "SOUL.md"
	FileUser   = "USER.md"
	FileMemory = "memory/MEMORY.md"
)

// MemoryFiles are the files an expectation may name, in report order.
var MemoryFiles = []string{FileUser, FileMemory, FileSoul}

// MaxScenarioBytes bounds a scenario file (its seeded files included): the
// built-in ones are under 5 KB, and a file is read whole into memory.
const MaxScenarioBytes = 4 << 20

// MaxSeedBytes bounds one seeded file's text.
const MaxSeedBytes = 1 << 20

// maxSeedName bounds a seeded file's path, and maxSeedComponent each of
// its parts (file systems refuse a name over 255 bytes).
const (
	maxSeedName      = 1024
	maxSeedComponent = 255
)

// minContextWindow is the smallest contextWindow a scenario may ask for: the
// system prompt alone takes about 1.5K tokens.
const minContextWindow = 4096

// Scenario is one scripted conversation and what should follow from it.
type Scenario struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	// Source is the file the scenario came from.
	Source   string    `json:"-"`
	Sessions []Session `json:"sessions"`
	Expect   []Expect  `json:"expect,omitempty"`
	// Questions are asked after Dream, each in a fresh session.
	Questions []Question `json:"questions,omitempty"`
	// Files are written into the throw-away workspace before the first
	// session (workspace-relative path -> content): documents a tool can
	// read, or memory files that already hold something.
	Files map[string]string `json:"files,omitempty"`
	// ContextWindow, when set, replaces the configured context window for
	// this scenario, so the Consolidator's budget is crossed by a
	// conversation of a few dozen turns.
	ContextWindow int `json:"contextWindow,omitempty"`
}

// Session is one conversation: its turns are played in order, then it is
// archived as /new archives it.
type Session struct {
	// Key names the conversation. A key with a colon is used as the
	// session key as it is ("slack:C1"), its prefix naming the channel;
	// any other key becomes "eval:<key>".
	Key    string `json:"key"`
	Sender string `json:"sender"`
	Turns  []Turn `json:"turns"`
}

// SessionKey is the gateway session key of the conversation.
func (s Session) SessionKey() string {
	if strings.Contains(s.Key, ":") {
		return s.Key
	}
	return "eval:" + s.Key
}

// Channel is the channel name the turns arrive on.
func (s Session) Channel() string {
	ch, _, _ := strings.Cut(s.SessionKey(), ":")
	return ch
}

// Turn is one message of the user. Idle archives the conversation's tail
// after it, as the idle timer would.
type Turn struct {
	Text string `json:"text"`
	Idle bool   `json:"idle,omitempty"`
}

// Expect is one check of the memory files: exactly one of Contains, Matches
// and Absent is set. File is "" for all memory files.
type Expect struct {
	File     string `json:"file,omitempty"`
	Contains string `json:"contains,omitempty"`
	Matches  string `json:"matches,omitempty"`
	Absent   string `json:"absent,omitempty"`

	re *regexp.Regexp
}

// Question is asked in a fresh session; the answer must contain Expect
// (case-insensitive).
type Question struct {
	Ask    string `json:"ask"`
	Expect string `json:"expect"`
}

// ScenarioError is a bad scenario file. It names the file, the scenario
// (when known) and the field (a path such as "sessions[1].turns[0].text").
type ScenarioError struct {
	File     string
	Scenario string
	Field    string
	Msg      string
}

func (e *ScenarioError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Scenario != "" {
		fmt.Fprintf(&b, ": scenario %q", e.Scenario)
	}
	if e.Field != "" {
		b.WriteString(": " + e.Field)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

//go:embed scenarios/*.json
var builtin embed.FS

// Builtin returns the scenarios shipped with dreamgate (eval/scenarios).
func Builtin() ([]Scenario, error) {
	return loadFS(builtin, "scenarios", "eval/scenarios/")
}

// Load reads the scenarios of a file, or of every *.json file of a
// directory (in name order). A bad file is a *ScenarioError; so is one over
// MaxScenarioBytes (read no further: --scenario /dev/zero fails at once).
// It returns ctx's error when ctx ends first, also while waiting on a FIFO
// nobody writes.
func Load(ctx context.Context, p string) ([]Scenario, error) {
	fi, err := os.Stat(p)
	if err != nil {
		return nil, &ScenarioError{File: p, Msg: "cannot be read: " + pathlessError(err)}
	}
	if !fi.IsDir() {
		data, err := readScenario(ctx, p, p)
		if err != nil {
			return nil, err
		}
		scs, err := Parse(p, data)
		if err != nil {
			return nil, err
		}
		return scs, checkUnique(scs)
	}
	entries, err := os.ReadDir(p) // in name order
	if err != nil {
		return nil, &ScenarioError{File: p, Msg: "cannot be read: " + pathlessError(err)}
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") {
			names = append(names, e.Name())
		}
	}
	if len(names) == 0 {
		return nil, &ScenarioError{File: p, Msg: "holds no *.json scenario file"}
	}
	var all []Scenario
	for _, name := range names {
		file := filepath.ToSlash(p) + "/" + name
		data, err := readScenario(ctx, filepath.Join(p, name), file)
		if err != nil {
			return nil, err
		}
		scs, err := Parse(file, data)
		if err != nil {
			return nil, err
		}
		all = append(all, scs...)
	}
	return all, checkUnique(all)
}

// readScenario reads the file at name (shown as file in errors), at most
// MaxScenarioBytes of it. The open and the reads happen on a goroutine, so
// that ctx's end is answered at once: a read is cut short by closing the
// file, and an open blocked on a FIFO without a writer (which nothing can
// interrupt) is left to end with the process, which is about to exit.
func readScenario(ctx context.Context, name, file string) ([]byte, error) {
	type result struct {
		data []byte
		err  error
	}
	done := make(chan result, 1)
	var (
		mu     sync.Mutex
		f      *os.File
		gaveUp bool
	)
	go func() {
		file, err := os.Open(name)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer file.Close()
		mu.Lock()
		f = file
		stop := gaveUp
		mu.Unlock()
		if stop {
			return
		}
		data, err := io.ReadAll(io.LimitReader(file, MaxScenarioBytes+1))
		done <- result{data, err}
	}()
	select {
	case r := <-done:
		switch {
		case r.err != nil:
			return nil, &ScenarioError{File: file, Msg: "cannot be read: " + pathlessError(r.err)}
		case len(r.data) > MaxScenarioBytes:
			return nil, &ScenarioError{File: file, Msg: fmt.Sprintf("is larger than %d MiB; a scenario file is a few KB of JSON", MaxScenarioBytes>>20)}
		}
		return r.data, nil
	case <-ctx.Done():
		mu.Lock()
		gaveUp = true
		if f != nil {
			f.Close() // the read returns
		}
		mu.Unlock()
		return nil, fmt.Errorf("read %s: %w", file, ctx.Err())
	}
}

func loadFS(fsys fs.FS, dir, display string) ([]Scenario, error) {
	names, err := fs.Glob(fsys, path.Join(dir, "*.json"))
	if err != nil {
		return nil, fmt.Errorf("list scenarios: %w", err)
	}
	sort.Strings(names)
	var all []Scenario
	for _, name := range names {
		file := display + path.Base(name)
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, &ScenarioError{File: file, Msg: "cannot be read: " + pathlessError(err)}
		}
		scs, err := Parse(file, data)
		if err != nil {
			return nil, err
		}
		all = append(all, scs...)
	}
	return all, checkUnique(all)
}

func pathlessError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// checkUnique refuses two scenarios of the same name: reports and --json
// consumers key on it.
func checkUnique(scs []Scenario) error {
	seen := map[string]string{}
	for _, s := range scs {
		if prev, ok := seen[s.Name]; ok {
			return &ScenarioError{File: s.Source, Scenario: s.Name, Field: "name",
				Msg: "is also the name of a scenario in " + prev}
		}
		seen[s.Name] = s.Source
	}
	return nil
}

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
		m, err := p.object(field, r, "key", "sender", "turns")
		if err != nil {
			return nil, err
		}
		var s Session
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
		m, err := p.object(field, r, "file", "contains", "matches", "absent")
		if err != nil {
			return nil, err
		}
		var e Expect
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
		m, err := p.object(field, r, "ask", "expect")
		if err != nil {
			return nil, err
		}
		var q Question
		for _, k := range []struct {
			name string
			dst  *string
		}{{"ask", &q.Ask}, {"expect", &q.Expect}} {
			v, ok := m[k.name]
			if !ok {
				return nil, p.errf(field+"."+k.name, "is missing")
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
