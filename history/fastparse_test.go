package history

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/audience"
)

// canonicalSeeds are lines the fast parser must agree with parseLine on:
// ours, nanobot's, and near misses of every kind.
func canonicalSeeds(t testing.TB) []string {
	seeds := []string{
		`{"cursor": 1, "timestamp": "2026-04-03 00:02", "content": "- a", "session_key": "slack:C1:1712.55"}`,
		`{"cursor": 0, "timestamp": "t", "content": ""}`,
		`{"cursor":7,"timestamp":"t","content":"x","session_key":null}`,
		` { "cursor" : 7 , "timestamp" : "t" , "content" : "x" } `,
		`{"cursor": 2, "timestamp": "t", "content": "line\nnext \"q\" back\\slash \/ \t\r\b\f"}`,
		`{"cursor": 3, "timestamp": "t", "content": "caf\u00e9 \ud83d\ude00"}`,
		`{"cursor": 3, "timestamp": "t", "content": "bad \ud83d surrogate"}`,
		`{"cursor": 4, "timestamp": "t", "content": "é ☃ 😀 \u2028"}`,
		`{"cursor": 4, "timestamp": "t", "content": "raw` + "\u2028" + ` sep"}`,
		`{"cursor": 5, "timestamp": "t", "content": "raw` + "\n" + `newline"}`,
		`{"cursor": 5, "timestamp": "t", "content": "raw` + "\x01" + `ctl"}`,
		`{"cursor": 5, "timestamp": "t", "content": "bad utf8 ` + "\xff\xc3" + `"}`,
		`{"cursor": 5, "timestamp": "t", "content": "esc then bad \n ` + "\xff" + `"}`,
		`{"cursor": 5, "timestamp": "t", "content": "bad escape \x"}`,
		`{"cursor": 5, "timestamp": "t", "content": "ends in escape \`,
		`{"cursor": 5, "timestamp": "t", "content": "unterminated}`,
		`{"cursor": 01, "timestamp": "t", "content": "x"}`,
		`{"cursor": -1, "timestamp": "t", "content": "x"}`,
		`{"cursor": -0, "timestamp": "t", "content": "x"}`,
		`{"cursor": 1.0, "timestamp": "t", "content": "x"}`,
		`{"cursor": 1e3, "timestamp": "t", "content": "x"}`,
		`{"cursor": 99999999999999999999, "timestamp": "t", "content": "x"}`,
		`{"cursor": 123456789, "timestamp": "t", "content": "x"}`,
		`{"cursor": 1234567890, "timestamp": "t", "content": "x"}`,
		`{"cursor": true, "timestamp": "t", "content": "x"}`,
		`{"cursor": "1", "timestamp": "t", "content": "x"}`,
		`{"cursor": 1, "timestamp": 5, "content": "x"}`,
		`{"cursor": 1, "timestamp": "t", "content": null}`,
		`{"cursor": 1, "timestamp": "t", "content": "x", "session_key": 3}`,
		`{"cursor": 1, "timestamp": "t", "content": "x", "session_key": nul}`,
		`{"cursor": 1, "timestamp": "t", "content": "x", "extra": [1, {"a": "}"}]}`,
		`{"cursor": 1, "timestamp": "t", "content": "x", "session_key": "k", "extra": 1}`,
		`{"Cursor": 1, "Timestamp": "t", "Content": "x"}`,
		`{"timestamp": "t", "cursor": 1, "content": "x"}`,
		`{"cursor": 1, "cursor": 2, "timestamp": "t", "content": "x"}`,
		`{"cursor": 1, "timestamp": "t", "content": "x"} trailing`,
		`{"cursor": 1, "timestamp": "t", "content": "x"}}`,
		`{"cursor": 1, "timestamp": "t", "content": "x",}`,
		`{"cursor": 1, "timestamp": "t", "content": "x"` + "\u00a0",
		"\u00a0" + `{"cursor": 1, "timestamp": "t", "content": "x"}`,
		`{"cursor": 1, "timestamp": "t", "content": "x"}` + "\r",
		`[1, 2]`, `"text"`, `{`, ``, `   `, `{"cursor": 1`,
		// Archive entries' source, and damaged ones parseLine drops.
		`{"cursor": 8, "timestamp": "t", "content": "- a", "session_key": "slack:C1", "session_id": "s1", "range": [0, 12]}`,
		`{"cursor": 8, "timestamp": "t", "content": "- a", "session_id": "s1", "range": [3, 4]}`,
		`{"cursor": 8, "timestamp": "t", "content": "- a", "session_key": null, "session_id": "s1", "range": [3, 4]}`,
		`{"cursor":8,"timestamp":"t","content":"x","session_key":"k","session_id":"s\"1","range":[3,4]}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "session_id": "", "range": [0, 1]}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "session_id": "s", "range": [1, 1]}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "session_id": "s", "range": [2, 1]}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "session_id": "s", "range": [01, 2]}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "session_id": "s", "range": [-1, 2]}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "session_id": "s", "range": [1, 2, 3]}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "session_id": "s", "range": [1]}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "session_id": "s", "range": [1.0, 2]}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "session_id": "s", "range": [1, 1234567890]}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "session_id": "s", "range": null}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "session_id": "s"}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "session_id": 5, "range": [1, 2]}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "range": [1, 2], "session_id": "s"}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "session_id": "s", "range": [1, 2], "session_key": "k"}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "session_id": "s", "range": [1, 2], "range": [3, 4]}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "session_id": "s", "range": [1, 2],}`,
		`{"cursor": 8, "timestamp": "t", "content": "x", "Session_ID": "s", "range": [1, 2]}`,
		// Scopes: written last, a name audience.ParseScope takes; any
		// other makes the line invalid.
		`{"cursor": 9, "timestamp": "t", "content": "x", "session_key": "k", "session_id": "s", "range": [1, 2], "scope": "team-slack-t1"}`,
		`{"cursor": 9, "timestamp": "t", "content": "x", "session_key": "k", "scope": "person-slack-t1-u2"}`,
		`{"cursor": 9, "timestamp": "t", "content": "x", "scope": "private-discord-1-2"}`,
		`{"cursor": 9, "timestamp": "t", "content": "x", "scope": ""}`,
		`{"cursor": 9, "timestamp": "t", "content": "x", "scope": null}`,
		`{"cursor": 9, "timestamp": "t", "content": "x", "scope": "team-slack-T1"}`,
		`{"cursor": 9, "timestamp": "t", "content": "x", "scope": "../etc"}`,
		`{"cursor": 9, "timestamp": "t", "content": "x", "scope": "team-slack-t1/x"}`,
		`{"cursor": 9, "timestamp": "t", "content": "x", "scope": 5}`,
		`{"cursor": 9, "timestamp": "t", "content": "x", "scope": "team-slack-t1", "session_key": "k"}`,
		`{"cursor": 9, "timestamp": "t", "content": "x", "scope": "team-slack-t1", "scope": "team-slack-t2"}`,
		`{"cursor": 9, "timestamp": "t", "content": "x", "scope": "team-slack-t1",}`,
		`{"cursor": 9, "timestamp": "t", "content": "x", "session_id": "s", "range": [2, 1], "scope": "team-slack-t1"}`,
		`{"cursor": 9, "timestamp": "t", "content": "x", "scope": "team-\u0073lack-t1"}`,
	}
	// Every line of the compatibility fixtures (nanobot's own files).
	filepath.WalkDir("testdata", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".jsonl") || strings.HasSuffix(p, ".golden")) {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			seeds = append(seeds, sc.Text())
		}
		return nil
	})
	return seeds
}

// FuzzParseCanonical: whatever the fast parser accepts, parseLine reads
// the same way.
func FuzzParseCanonical(f *testing.F) {
	for _, s := range canonicalSeeds(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		got, ok := parseCanonical([]byte(line))
		if !ok {
			return
		}
		want, kind := parseLine([]byte(line))
		if kind != lineOK || got != want {
			t.Errorf("%q: fast %+v; parseLine %+v (%v)", line, got, want, kind)
		}
	})
}

// TestParseCanonicalTakesWhatWeWrite: every line Append writes, whatever
// its content, is one the fast parser reads (unless a control character
// needed a \u escape), so a big history is not parsed by encoding/json.
func TestParseCanonicalTakesWhatWeWrite(t *testing.T) {
	contents := []string{"- a fact", "", "two\nlines", `quote " and \ back`, "tab\tcr\r", "é ☃ 😀", "sep \u2028 \u2029", "<html> & 'x'"}
	for _, c := range contents {
		for _, key := range []string{"", "slack:C1:1712.55"} {
			for _, src := range []Entry{{}, {SessionID: "3f2a9c1e", Range: [2]int{0, 12}}, {SessionID: c + "x", Range: [2]int{40, 123456789}}} {
				for _, scope := range []audience.Scope{audience.Default, "team-slack-t1", "private-slack-t1-c_x.2e"} {
					e := Entry{Cursor: 12345, Timestamp: "2026-04-03 00:02", Content: c, SessionKey: key, SessionID: src.SessionID, Range: src.Range, Scope: scope}
					line := appendEntryJSON(nil, e)
					got, ok := parseCanonical(line)
					if !ok || got != e {
						t.Errorf("%s: fast parser %+v, %v; want %+v", line, got, ok, e)
					}
					if back, kind := parseLine(line); kind != lineOK || back != e {
						t.Errorf("%s: parseLine %+v, %v; want %+v", line, back, kind, e)
					}
				}
			}
		}
	}
	if _, ok := parseCanonical(appendEntryJSON(nil, Entry{Cursor: 1, Content: "bell\a"})); ok {
		t.Error("a \\u escape was decoded by the fast parser (encoding/json's job)")
	}
}

// TestHasControl: the word-at-a-time check agrees with a byte loop, for
// every byte value at every position of a 17-byte string.
func TestHasControl(t *testing.T) {
	for pos := range 17 {
		for c := range 256 {
			s := bytes.Repeat([]byte{'a'}, 17)
			s[pos] = byte(c)
			if got, want := hasControl(s), c < 0x20; got != want {
				t.Fatalf("byte %#x at %d: hasControl = %v", c, pos, got)
			}
		}
	}
}

// BenchmarkParseArchiveLine: an archive entry with its source, read by the
// fast parser and by encoding/json (parseLine).
func BenchmarkParseArchiveLine(b *testing.B) {
	line := appendEntryJSON(nil, Entry{Cursor: 4321, Timestamp: "2026-04-03 00:02",
		Content: strings.Repeat("- The user prefers tea over coffee.\n", 8), SessionKey: "slack:C1:1712.55",
		SessionID: "3f2a9c1e", Range: [2]int{12, 40}})
	b.Run("fast", func(b *testing.B) {
		for b.Loop() {
			if _, ok := parseCanonical(line); !ok {
				b.Fatal("not canonical")
			}
		}
	})
	b.Run("parseLine", func(b *testing.B) {
		for b.Loop() {
			if _, kind := parseLine(line); kind != lineOK {
				b.Fatal(kind)
			}
		}
	})
}
