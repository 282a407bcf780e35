package agent

import (
	"github.com/dreamgate/dreamgate/workspace"

	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostilePaths must be refused by every tool under ChatPolicy. writeOnly
// entries are readable in chat and refused only by the writing tools.
func hostilePaths(fx *fixture) []struct {
	name, path string
	writeOnly  bool
} {
	return []struct {
		name, path string
		writeOnly  bool
	}{
		{"parent", "../x", false},
		{"parent to the sibling", "../outside/secret.txt", false},
		{"absolute system file", "/etc/passwd", false},
		{"absolute outside", filepath.Join(fx.outside, "secret.txt"), false},
		{"absolute inside", filepath.Join(fx.dir, "SOUL.md"), false},
		{"home", "~/.ssh/id_ed25519", false},
		{"climb through memory", "memory/../../x", false},
		{"climb to the sibling", "memory/../../outside/secret.txt", false},
		{"backslash climb", `memory\..\..\x`, false},
		{"symlink out", "link_out", false},
		{"absolute symlink out", "link_abs", false},
		{"through a dir symlink out", "linkdir/secret.txt", false},
		{"new file through a dir symlink", "linkdir/new.txt", false},
		{"dangling symlink out", "memory/link_up", false},
		{"symlink to a denied file", "link_hist", false},
		{"through a dir symlink inside", "memlink/MEMORY.md", false},
		{"NUL byte", "memory/MEMORY.md\x00.txt", false},
		{"control character", "memory/new\nfile.md", false},
		{"long component", strings.Repeat("a", 300), false},
		{"long path", strings.Repeat("d/", 600) + "x", false},
		{"through a file", "memory/MEMORY.md/x", false},
		{"git config", ".git/config", false},
		{"git config in capitals", ".GIT/config", false},
		{"git dir", ".git", false},
		{"git via dot segments", "memory/../.git/HEAD", false},
		{"empty", "", false},
		{"history", "memory/history.jsonl", true},
		{"history in other case", "MEMORY/History.JSONL", true},
		{"dream cursor, dotted", "./memory//.dream_cursor", true},
		{"cursor", "memory/.cursor", true},
		{"lock file", "memory/history.lock", true},
		{"consolidator lock", "memory/.history.lock", true},
		{"dream state", "memory/.dream_state", true},
		{"gitignore", ".gitignore", true},
		{"new lock file", "memory/sub/x.lock", true},
		{"below the history file", "memory/history.jsonl/x", false},
		{"hard link to a file outside", "hardout", false},
	}
}

func TestFileToolsRefuseHostilePaths(t *testing.T) {
	fx := newFixture(t)
	tools := FileTools(fx.w, ChatPolicy())
	before := snapshot(t, fx.base)
	sentinels := []error{ErrInvalidPath, ErrOutsideWorkspace, ErrSymlink, ErrHardLink, ErrNotAllowed}
	for _, hp := range hostilePaths(fx) {
		calls := []struct {
			tool  string
			args  json.RawMessage
			write bool
		}{
			{ToolReadFile, args(t, "path", hp.path), false},
			{ToolListDir, args(t, "path", hp.path), false},
			{ToolWriteFile, args(t, "path", hp.path, "content", "pwned"), true},
			{ToolEditFile, args(t, "path", hp.path, "old_text", "SECRET", "new_text", "pwned"), true},
			{ToolEditFile, args(t, "path", hp.path, "old_text", "", "new_text", "pwned"), true},
		}
		for _, c := range calls {
			if hp.writeOnly && !c.write {
				continue
			}
			if hp.path == "" && c.tool == ToolListDir {
				continue // an empty path lists the workspace root
			}
			t.Run(hp.name+"/"+c.tool, func(t *testing.T) {
				out, err := toolByName(t, tools, c.tool).Run(t.Context(), c.args)
				if err == nil {
					t.Fatalf("%s(%q) was allowed: %q", c.tool, hp.path, out)
				}
				refused := false
				for _, s := range sentinels {
					refused = refused || errors.Is(err, s)
				}
				if !refused {
					t.Fatalf("%s(%q) failed, but not as a refusal: %v", c.tool, hp.path, err)
				}
				noAbsPath(t, fx, err.Error())
				if strings.Contains(err.Error(), "SECRET") {
					t.Fatalf("refusal leaks content: %v", err)
				}
			})
		}
	}
	if d := diffSnapshots(before, snapshot(t, fx.base)); len(d) > 0 {
		t.Fatalf("hostile calls changed the tree: %v", d)
	}
}

// TestChatPolicyReadsWhatItMayNotWrite: the write-only refusals above must
// not hide the files from reading.
func TestChatPolicyReadsWhatItMayNotWrite(t *testing.T) {
	fx := newFixture(t)
	read := toolByName(t, FileTools(fx.w, ChatPolicy()), ToolReadFile)
	for _, p := range []string{"memory/history.jsonl", "./memory//.dream_cursor", "memory/history.lock", "memory/../SOUL.md"} {
		if _, err := read.Run(t.Context(), args(t, "path", p)); err != nil {
			t.Errorf("read_file(%q): %v", p, err)
		}
	}
}

func TestDreamPolicy(t *testing.T) {
	fx := newFixture(t)
	pol := DreamPolicy()
	tests := []struct {
		path string
		want string // "" = refused
	}{
		{"SOUL.md", "SOUL.md"},
		{"USER.md", "USER.md"},
		{"memory/MEMORY.md", "memory/MEMORY.md"},
		{"./memory//MEMORY.md", "memory/MEMORY.md"},
		{"notes/../USER.md", "USER.md"},
		{"AGENTS.md", ""},
		{"soul.md", ""},
		{"memory/history.jsonl", ""},
		{"memory/.dream_cursor", ""},
		{"memory", ""},
		{".", ""},
		{"memory/MEMORY.md/x", ""},
		{"prompts/dream.md", ""},
		{".gitignore", ""},
		{"link_hist", ""},
	}
	for _, tt := range tests {
		for _, write := range []bool{false, true} {
			rel, err := Resolve(fx.w, tt.path, pol, write)
			if tt.want == "" && err == nil {
				t.Errorf("Resolve(%q, write=%v) = %q, want refused", tt.path, write, rel)
			}
			if tt.want != "" && (err != nil || rel != tt.want) {
				t.Errorf("Resolve(%q, write=%v) = %q, %v; want %q", tt.path, write, rel, err, tt.want)
			}
		}
	}
	before := snapshot(t, fx.base)
	edit := toolByName(t, FileTools(fx.w, pol, ToolEditFile), ToolEditFile)
	for _, p := range []string{"AGENTS.md", "notes/todo.md", "memory/history.jsonl", "memory/new.md"} {
		if _, err := edit.Run(t.Context(), args(t, "path", p, "old_text", "SECRET", "new_text", "x")); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("edit_file(%q) = %v, want ErrNotAllowed", p, err)
		}
	}
	if d := diffSnapshots(before, snapshot(t, fx.base)); len(d) > 0 {
		t.Fatalf("refused edits changed the tree: %v", d)
	}
	if got := edit.Def().Description; !strings.Contains(got, "SOUL.md, USER.md, memory/MEMORY.md") {
		t.Errorf("description does not name the allowed files: %q", got)
	}
}

func TestEditFile(t *testing.T) {
	missing := "\x00missing" // marks a file that does not exist
	tests := []struct {
		name     string
		initial  string
		old, new string
		want     string // the file afterwards; missing = still absent
		wantOut  string
		wantErr  string
	}{
		{"replace the only match", "a\nb\nc\n", "b", "B", "a\nB\nc\n", "Edited f.md: replaced the text at line 2.", ""},
		{"multi-line match", "one\ntwo\nthree\n", "two\nthree", "2\n3", "one\n2\n3\n", "Edited f.md: replaced the text at line 2.", ""},
		{"delete", "keep\ndrop\n", "drop\n", "", "keep\n", "Edited f.md: replaced the text at line 2.", ""},
		{"not found", "a\nb\n", "z", "y", "a\nb\n", "", "old_text not found in f.md; read the file and copy the text exactly"},
		{"not found, whitespace differs", "- fact\n", " - fact ", "x", "- fact\n", "", "old_text not found in f.md (it occurs without the leading or trailing whitespace; copy the text exactly)"},
		{"not found, case differs", "Dark Mode\n", "dark mode", "x", "Dark Mode\n", "", "old_text not found in f.md (it occurs with different letter case; copy the text exactly)"},
		{"not found, CRLF file", "a\r\nb\r\n", "a\nb", "x", "a\r\nb\r\n", "", "old_text not found in f.md (the file has Windows line endings, \\r\\n)"},
		{"three matches", "x\ny\nx\ny\nx\n", "x", "z", "x\ny\nx\ny\nx\n", "", "old_text appears 3 times in f.md (lines 1, 3, 5); add context so it matches once"},
		{"overlapping matches", "aaa", "aa", "b", "aaa", "", "old_text appears 2 times in f.md (lines 1, 1); add context so it matches once"},
		{"no change", "a\n", "a", "a", "a\n", "", "no change: old_text and new_text are identical"},
		{"no change on a missing file", missing, "", "", missing, "", "no change: old_text and new_text are identical"},
		{"create a missing file", missing, "", "# New\n", "# New\n", "Created f.md with new_text (6 characters).", ""},
		{"fill an empty file", "", "", "# New\n", "# New\n", "Filled the empty f.md with new_text (6 characters).", ""},
		{"empty old_text on a non-empty file", "x\n", "", "y", "x\n", "", "old_text is empty but f.md is not; give the exact text to replace"},
		{"missing file with old_text", missing, "x", "y", missing, "", "f.md does not exist; to create it, call edit_file with an empty old_text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "f.md")
			if tt.initial != missing {
				if err := os.WriteFile(file, []byte(tt.initial), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			w, err := workspace.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			edit := toolByName(t, FileTools(w, Policy{}, ToolEditFile), ToolEditFile)
			out, err := edit.Run(t.Context(), args(t, "path", "f.md", "old_text", tt.old, "new_text", tt.new))
			switch {
			case tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr):
				t.Fatalf("error = %v, want %q", err, tt.wantErr)
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error = %v", err)
			case out != tt.wantOut:
				t.Fatalf("result = %q, want %q", out, tt.wantOut)
			}
			b, err := os.ReadFile(file)
			if tt.want == missing {
				if !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("file exists: %q %v", b, err)
				}
			} else if err != nil || string(b) != tt.want {
				t.Fatalf("file = %q, %v; want %q", b, err, tt.want)
			}
			if tt.initial != missing && tt.want != missing {
				if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
					t.Fatalf("mode not kept: %v %v", fi.Mode(), err)
				}
			}
			entries, _ := os.ReadDir(dir)
			if len(entries) > 1 {
				t.Fatalf("left files behind: %v", entries)
			}
		})
	}
}

func TestEditFileArguments(t *testing.T) {
	fx := newFixture(t)
	edit := toolByName(t, FileTools(fx.w, ChatPolicy()), ToolEditFile)
	tests := []struct {
		name, args, want string
	}{
		{"missing old_text", `{"path":"SOUL.md","new_text":"x"}`, "edit_file needs the argument old_text"},
		{"missing new_text", `{"path":"SOUL.md","old_text":"x"}`, "edit_file needs the argument new_text"},
		{"missing path", `{"old_text":"x","new_text":"y"}`, "edit_file needs the argument path"},
		{"unknown argument", `{"file_path":"SOUL.md","old_text":"x","new_text":"y"}`, `unknown field "file_path"`},
		{"wrong type", `{"path":"SOUL.md","old_text":1,"new_text":"y"}`, "edit_file takes {"},
		{"not an object", `["SOUL.md"]`, "edit_file takes {"},
	}
	before := snapshot(t, fx.base)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := edit.Run(t.Context(), json.RawMessage(tt.args))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if d := diffSnapshots(before, snapshot(t, fx.base)); len(d) > 0 {
		t.Fatalf("bad calls changed the tree: %v", d)
	}
}

func TestEditFileCreatesParentDirectories(t *testing.T) {
	dir := t.TempDir()
	w, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	edit := toolByName(t, FileTools(w, DreamPolicy()), ToolEditFile)
	if _, err := edit.Run(t.Context(), args(t, "path", "memory/MEMORY.md", "old_text", "", "new_text", "- fact\n")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, "memory", "MEMORY.md")); err != nil || string(b) != "- fact\n" {
		t.Fatalf("MEMORY.md = %q, %v", b, err)
	}
}

func TestReadFile(t *testing.T) {
	fx := newFixture(t)
	big := strings.Repeat("line of text é\n", 10_000) // 150,000 characters
	for name, content := range map[string]string{"big.md": big, "empty.md": "", "bin.dat": "a\x00b"} {
		if err := os.WriteFile(filepath.Join(fx.dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	read := toolByName(t, FileTools(fx.w, ChatPolicy()), ToolReadFile)
	tests := []struct {
		name, path, want, wantErr string
	}{
		{"a file", "memory/MEMORY.md", fixtureFiles["memory/MEMORY.md"], ""},
		{"dot segments", "./notes/../USER.md", fixtureFiles["USER.md"], ""},
		{"empty", "empty.md", "(empty.md is empty)", ""},
		{"missing", "memory/nope.md", "", "memory/nope.md does not exist"},
		{"a directory", "memory", "", "memory is a directory, not a file"},
		{"binary", "bin.dat", "", "bin.dat looks like a binary file (3 bytes); it is not shown"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := read.Run(t.Context(), args(t, "path", tt.path))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || out != tt.want {
				t.Fatalf("read = %q, %v; want %q", out, err, tt.want)
			}
		})
	}
	t.Run("cut at 128K characters with a note", func(t *testing.T) {
		out, err := read.Run(t.Context(), args(t, "path", "big.md"))
		if err != nil {
			t.Fatal(err)
		}
		body, note, ok := strings.Cut(out, "\n[cut: ")
		if !ok || !strings.HasPrefix(big, body) || !strings.HasSuffix(body, "\n") {
			t.Fatalf("no cut on a line boundary: ...%q", out[len(out)-80:])
		}
		if n := len([]rune(body)); n > maxReadChars || n < maxReadChars-20 {
			t.Fatalf("kept %d characters", n)
		}
		if !strings.HasPrefix(note, "big.md is 160000 bytes; only its first") {
			t.Fatalf("note = %q", note)
		}
	})
}

func TestWriteFile(t *testing.T) {
	fx := newFixture(t)
	if err := os.Chmod(filepath.Join(fx.dir, "AGENTS.md"), 0o640); err != nil {
		t.Fatal(err)
	}
	write := toolByName(t, FileTools(fx.w, ChatPolicy()), ToolWriteFile)
	tests := []struct {
		name, path, content, wantOut, wantErr string
		wantMode                              os.FileMode
	}{
		{"new file in new directories", "notes/2026/april.md", "- plan\n", "Created notes/2026/april.md (7 characters).", "", 0},
		{"replace keeps the mode", "AGENTS.md", "new rules\n", "Replaced the content of AGENTS.md (10 characters).", "", 0o640},
		{"empty content", "notes/empty.md", "", "Created notes/empty.md (0 characters).", "", 0},
		{"a directory", "notes", "x", "", "notes is a directory, not a file", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := write.Run(t.Context(), args(t, "path", tt.path, "content", tt.content))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || out != tt.wantOut {
				t.Fatalf("write = %q, %v; want %q", out, err, tt.wantOut)
			}
			p := filepath.Join(fx.dir, filepath.FromSlash(tt.path))
			b, err := os.ReadFile(p)
			if err != nil || string(b) != tt.content {
				t.Fatalf("file = %q, %v", b, err)
			}
			if tt.wantMode != 0 {
				if fi, _ := os.Stat(p); fi.Mode().Perm() != tt.wantMode {
					t.Fatalf("mode = %v, want %v", fi.Mode().Perm(), tt.wantMode)
				}
			}
		})
	}
	for _, d := range []string{fx.dir, filepath.Join(fx.dir, "notes")} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			if strings.Contains(e.Name(), "tmp") {
				t.Errorf("temp file left behind: %s", e.Name())
			}
		}
	}
}

func TestListDir(t *testing.T) {
	fx := newFixture(t)
	list := toolByName(t, FileTools(fx.w, ChatPolicy()), ToolListDir)
	if err := os.Mkdir(filepath.Join(fx.dir, "empty"), 0o755); err != nil {
		t.Fatal(err)
	}
	root := strings.Join([]string{
		"AGENTS.md", "SOUL.md", "USER.md", "empty/", "hardout",
		"link_abs (symbolic link, not followed)", "link_hist (symbolic link, not followed)",
		"link_out (symbolic link, not followed)", "linkdir (symbolic link, not followed)",
		"memlink (symbolic link, not followed)", "memory/", "notes/",
	}, "\n")
	tests := []struct {
		name, args, want, wantErr string
	}{
		{"root hides .git", `{"path":"."}`, root, ""},
		{"empty path is the root", `{"path":""}`, root, ""},
		{"no path is the root", `{}`, root, ""},
		{"memory", `{"path":"memory/"}`, ".cursor\n.dream_cursor\nMEMORY.md\nhistory.jsonl\nhistory.lock\nlink_up (symbolic link, not followed)", ""},
		{"empty dir", `{"path":"empty"}`, "(empty/ is empty)", ""},
		{"a file", `{"path":"SOUL.md"}`, "", "SOUL.md is a file, not a directory"},
		{"missing", `{"path":"nope"}`, "", "nope does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := list.Run(t.Context(), json.RawMessage(tt.args))
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || out != tt.want {
				t.Fatalf("list = %q, %v\nwant %q", out, err, tt.want)
			}
		})
	}
}

func TestFileToolsUnknownNamePanics(t *testing.T) {
	fx := newFixture(t)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for an unknown tool name")
		}
	}()
	FileTools(fx.w, Policy{}, "shell")
}

func TestFileToolsHonourCancellation(t *testing.T) {
	fx := newFixture(t)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	before := snapshot(t, fx.base)
	tools := FileTools(fx.w, ChatPolicy())
	for _, c := range []struct {
		tool string
		args json.RawMessage
	}{
		{ToolReadFile, args(t, "path", "SOUL.md")},
		{ToolListDir, args(t, "path", ".")},
		{ToolWriteFile, args(t, "path", "notes/new.md", "content", "x")},
		{ToolEditFile, args(t, "path", "notes/new.md", "old_text", "", "new_text", "x")},
	} {
		if _, err := toolByName(t, tools, c.tool).Run(ctx, c.args); !errors.Is(err, context.Canceled) {
			t.Errorf("%s after cancellation: %v", c.tool, err)
		}
	}
	if d := diffSnapshots(before, snapshot(t, fx.base)); len(d) > 0 {
		t.Fatalf("cancelled calls changed the tree: %v", d)
	}
}
