package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/internal/textcut"
	"github.com/dreamgate/dreamgate/llm"
	"github.com/dreamgate/dreamgate/workspace"
)

// Names of the file tools, as FileTools takes them and the model sees them.
const (
	ToolReadFile  = "read_file"
	ToolWriteFile = "write_file"
	ToolEditFile  = "edit_file"
	ToolListDir   = "list_dir"
)

// Limits of the file tools.
const (
	// maxReadChars caps what read_file returns.
	maxReadChars = 128_000
	// maxEditBytes caps the files edit_file rewrites; memory files are a few
	// kilobytes, and rewriting a huge file for a small edit is a mistake.
	maxEditBytes = 8 << 20
	// maxListEntries caps what list_dir returns.
	maxListEntries = 1000
	// maxLinesShown caps the line numbers an ambiguous edit reports.
	maxLinesShown = 10
)

// FileTools returns the named file tools (ToolReadFile, ToolWriteFile,
// ToolEditFile, ToolListDir; none means all four, in that order) working in w
// under pol. An unknown name is a programming error and panics.
func FileTools(w *workspace.Root, pol Policy, names ...string) []Tool {
	if len(names) == 0 {
		names = []string{ToolReadFile, ToolWriteFile, ToolEditFile, ToolListDir}
	}
	ft := &fileTools{w: w, pol: pol}
	tools := make([]Tool, 0, len(names))
	for _, name := range names {
		t, ok := ft.tool(name)
		if !ok {
			panic(fmt.Sprintf("agent.FileTools: unknown tool %q", name))
		}
		tools = append(tools, t)
	}
	return tools
}

type fileTools struct {
	w   *workspace.Root
	pol Policy
}

// funcTool is a Tool made of a definition and a function.
type funcTool struct {
	def llm.ToolDef
	run func(ctx context.Context, args json.RawMessage) (string, error)
}

func (t *funcTool) Def() llm.ToolDef { return t.def }

func (t *funcTool) Run(ctx context.Context, args json.RawMessage) (string, error) {
	return t.run(ctx, args)
}

func (ft *fileTools) tool(name string) (Tool, bool) {
	scope := ""
	if len(ft.pol.Allow) > 0 {
		scope = " Only these files can be used: " + strings.Join(ft.pol.Allow, ", ") + "."
	}
	const pathDoc = `"path":{"type":"string","description":"File path relative to the workspace root, e.g. memory/MEMORY.md"}`
	switch name {
	case ToolReadFile:
		return &funcTool{llm.ToolDef{
			Name:        ToolReadFile,
			Description: "Return the text of a file in the workspace." + scope,
			Parameters:  schema(pathDoc, "path"),
		}, ft.readFile}, true
	case ToolWriteFile:
		return &funcTool{llm.ToolDef{
			Name: ToolWriteFile,
			Description: "Create a file in the workspace, or replace all of an existing file's text, with content. " +
				"Missing directories are created. To change part of a file, use edit_file instead." + scope,
			Parameters: schema(pathDoc+`,"content":{"type":"string","description":"The complete new text of the file"}`,
				"path", "content"),
		}, ft.writeFile}, true
	case ToolEditFile:
		return &funcTool{llm.ToolDef{
			Name: ToolEditFile,
			Description: "Replace one passage of a file. old_text must be copied exactly from the file (same spaces " +
				"and line breaks) and must occur exactly once; include neighbouring lines when it is not unique. " +
				"It is replaced by new_text (empty new_text deletes it). With an empty old_text, a missing or empty " +
				"file is created with new_text." + scope,
			Parameters: schema(pathDoc+
				`,"old_text":{"type":"string","description":"The exact text to replace; it must occur once"}`+
				`,"new_text":{"type":"string","description":"The text to put in its place"}`,
				"path", "old_text", "new_text"),
		}, ft.editFile}, true
	case ToolListDir:
		return &funcTool{llm.ToolDef{
			Name:        ToolListDir,
			Description: "List a directory of the workspace (\".\" is the workspace root); directory names end with /." + scope,
			Parameters: schema(`"path":{"type":"string","description":"Directory path relative to the workspace root; . for the root"}`,
				"path"),
		}, ft.listDir}, true
	}
	return nil, false
}

func schema(props string, required ...string) json.RawMessage {
	req, _ := json.Marshal(required)
	return json.RawMessage(`{"type":"object","properties":{` + props + `},"required":` + string(req) +
		`,"additionalProperties":false}`)
}

// decodeArgs reads a tool's JSON object strictly: an unknown argument name is
// an error, so a model guessing "file_path" learns the right name at once.
func decodeArgs(tool string, raw json.RawMessage, dst any, usage string) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return fmt.Errorf("%s takes %s: %v", tool, usage, err)
	}
	return nil
}

func missing(tool, arg string) error {
	return fmt.Errorf("%s needs the argument %s", tool, arg)
}

func (ft *fileTools) readFile(ctx context.Context, raw json.RawMessage) (string, error) {
	var a struct {
		Path *string `json:"path"`
	}
	if err := decodeArgs(ToolReadFile, raw, &a, `{"path": string}`); err != nil {
		return "", err
	}
	if a.Path == nil {
		return "", missing(ToolReadFile, "path")
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	rel, target, err := resolve(ft.w, *a.Path, ft.pol, false)
	if err != nil {
		return "", err
	}
	if err := regularFile(rel, target); err != nil {
		return "", err
	}
	f, err := ft.open(rel, target)
	if err != nil {
		return "", err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxReadChars*utf8.UTFMax+1))
	if err != nil {
		return "", ioFailure("read", rel, err)
	}
	switch {
	case len(data) == 0:
		return fmt.Sprintf("(%s is empty)", rel), nil
	case bytes.IndexByte(data[:min(len(data), 8192)], 0) >= 0:
		return "", fmt.Errorf("%s looks like a binary file (%d bytes); it is not shown", rel, target.Size())
	}
	text, cut := textcut.Limit{Max: maxReadChars, AtLine: true}.Cut(string(data))
	if cut || int64(len(data)) < target.Size() {
		text += fmt.Sprintf("\n[cut: %s is %d bytes; only its first %d characters are shown]",
			rel, target.Size(), utf8.RuneCountInString(text))
	}
	return text, nil
}

func (ft *fileTools) writeFile(ctx context.Context, raw json.RawMessage) (string, error) {
	var a struct {
		Path    *string `json:"path"`
		Content *string `json:"content"`
	}
	if err := decodeArgs(ToolWriteFile, raw, &a, `{"path": string, "content": string}`); err != nil {
		return "", err
	}
	switch {
	case a.Path == nil:
		return "", missing(ToolWriteFile, "path")
	case a.Content == nil:
		return "", missing(ToolWriteFile, "content")
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var out string
	err := ft.w.Exclusive(func() (err error) {
		out, err = ft.write(*a.Path, *a.Content)
		return err
	})
	return out, err
}

// write is write_file's work under the workspace's write lock.
func (ft *fileTools) write(p, content string) (string, error) {
	rel, target, err := resolve(ft.w, p, ft.pol, true)
	if err != nil {
		return "", err
	}
	if target != nil {
		if err := regularFile(rel, target); err != nil {
			return "", err
		}
	} else if err := ft.mkdirParent(rel); err != nil {
		return "", err
	}
	if err := ft.writeAtomic(rel, []byte(content), target); err != nil {
		return "", err
	}
	n := utf8.RuneCountInString(content)
	if target == nil {
		return fmt.Sprintf("Created %s (%d characters).", rel, n), nil
	}
	return fmt.Sprintf("Replaced the content of %s (%d characters).", rel, n), nil
}

func (ft *fileTools) editFile(ctx context.Context, raw json.RawMessage) (string, error) {
	var a struct {
		Path    *string `json:"path"`
		OldText *string `json:"old_text"`
		NewText *string `json:"new_text"`
	}
	if err := decodeArgs(ToolEditFile, raw, &a, `{"path": string, "old_text": string, "new_text": string}`); err != nil {
		return "", err
	}
	switch {
	case a.Path == nil:
		return "", missing(ToolEditFile, "path")
	case a.OldText == nil:
		return "", missing(ToolEditFile, "old_text")
	case a.NewText == nil:
		return "", missing(ToolEditFile, "new_text")
	case *a.OldText == *a.NewText:
		return "", errors.New("no change: old_text and new_text are identical")
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	var out string
	err := ft.w.Exclusive(func() error {
		rel, target, err := resolve(ft.w, *a.Path, ft.pol, true)
		if err != nil {
			return err
		}
		out, err = ft.edit(rel, target, *a.OldText, *a.NewText)
		return err
	})
	return out, err
}

// writeAtomic replaces rel with data through the workspace's atomic write.
// existing is the Lstat of the file being replaced (nil when it is new);
// its permission bits are kept.
func (ft *fileTools) writeAtomic(rel string, data []byte, existing fs.FileInfo) error {
	mode := newFileMode
	if existing != nil {
		mode = existing.Mode().Perm()
	}
	if err := ft.w.WriteFile(rel, data, mode); err != nil {
		return ioFailure("write", rel, err)
	}
	return nil
}

// edit applies edit_file's rules to rel, whose Lstat is target (nil when
// missing). The caller holds the workspace's write lock.
func (ft *fileTools) edit(rel string, target fs.FileInfo, oldText, newText string) (string, error) {
	var content []byte
	if target != nil {
		if err := regularFile(rel, target); err != nil {
			return "", err
		}
		if target.Size() > maxEditBytes {
			return "", fmt.Errorf("%s is %d bytes, too large to edit (the limit is %d)", rel, target.Size(), maxEditBytes)
		}
		var err error
		if content, err = ft.readAll(rel, target); err != nil {
			return "", err
		}
	}
	if oldText == "" {
		if len(content) > 0 {
			return "", fmt.Errorf("old_text is empty but %s is not; give the exact text to replace", rel)
		}
		if target == nil {
			if err := ft.mkdirParent(rel); err != nil {
				return "", err
			}
		}
		if err := ft.writeAtomic(rel, []byte(newText), target); err != nil {
			return "", err
		}
		verb := "Created"
		if target != nil {
			verb = "Filled the empty"
		}
		return fmt.Sprintf("%s %s with new_text (%d characters).", verb, rel, utf8.RuneCountInString(newText)), nil
	}
	if target == nil {
		return "", fmt.Errorf("%s does not exist; to create it, call edit_file with an empty old_text", rel)
	}
	at := occurrences(content, []byte(oldText))
	switch len(at) {
	case 0:
		return "", fmt.Errorf("old_text not found in %s%s", rel, mismatchHint(content, oldText))
	case 1:
	default:
		return "", fmt.Errorf("old_text appears %d times in %s (%s); add context so it matches once",
			len(at), rel, lineList(content, at))
	}
	i := at[0]
	updated := make([]byte, 0, len(content)-len(oldText)+len(newText))
	updated = append(updated, content[:i]...)
	updated = append(updated, newText...)
	updated = append(updated, content[i+len(oldText):]...)
	if err := ft.writeAtomic(rel, updated, target); err != nil {
		return "", err
	}
	return fmt.Sprintf("Edited %s: replaced the text at line %d.", rel, lineOf(content, i)), nil
}

func (ft *fileTools) listDir(ctx context.Context, raw json.RawMessage) (string, error) {
	var a struct {
		Path *string `json:"path"`
	}
	if err := decodeArgs(ToolListDir, raw, &a, `{"path": string}`); err != nil {
		return "", err
	}
	p := "."
	if a.Path != nil && *a.Path != "" {
		p = *a.Path
	}
	if err := ctx.Err(); err != nil {
		return "", err
	}
	rel, target, err := resolve(ft.w, p, ft.pol, false)
	if err != nil {
		return "", err
	}
	if target == nil {
		return "", fmt.Errorf("%s does not exist", rel)
	}
	if !target.IsDir() {
		return "", fmt.Errorf("%s is a file, not a directory", rel)
	}
	d, err := ft.open(rel, target)
	if err != nil {
		return "", err
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return "", ioFailure("list", rel, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	var b strings.Builder
	shown := 0
	for _, e := range entries {
		name := e.Name()
		if strings.EqualFold(name, ".git") || ft.pol.hidden(path.Join(rel, name)) {
			continue
		}
		if e.IsDir() {
			if fi, err := e.Info(); err == nil && ft.w.Forbidden(fi) {
				continue
			}
		}
		if shown == maxListEntries {
			fmt.Fprintf(&b, "[cut: only the first %d entries are shown]\n", maxListEntries)
			break
		}
		shown++
		switch {
		case e.Type()&fs.ModeSymlink != 0:
			b.WriteString(name + " (symbolic link, not followed)\n")
		case e.IsDir():
			b.WriteString(name + "/\n")
		default:
			b.WriteString(name + "\n")
		}
	}
	if shown == 0 {
		if rel == "." {
			return "(the workspace is empty)", nil
		}
		return fmt.Sprintf("(%s/ is empty)", rel), nil
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// regularFile refuses a missing target, a directory or a special file.
func regularFile(rel string, target fs.FileInfo) error {
	switch {
	case target == nil:
		return fmt.Errorf("%s does not exist", rel)
	case target.IsDir():
		return fmt.Errorf("%s is a directory, not a file", rel)
	case !target.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", rel)
	}
	return nil
}

// open opens rel and makes sure it is still the file Resolve checked: the
// root follows a link swapped in since, so a mismatch is refused.
func (ft *fileTools) open(rel string, target fs.FileInfo) (*os.File, error) {
	f, err := ft.w.Open(rel)
	if err != nil {
		return nil, ioFailure("open", rel, err)
	}
	fi, err := f.Stat()
	if err == nil && !os.SameFile(fi, target) {
		err = errChanged
	}
	if err != nil {
		_ = f.Close()
		return nil, ioFailure("open", rel, err)
	}
	return f, nil
}

func (ft *fileTools) readAll(rel string, target fs.FileInfo) ([]byte, error) {
	f, err := ft.open(rel, target)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxEditBytes+1))
	if err != nil {
		return nil, ioFailure("read", rel, err)
	}
	if len(data) > maxEditBytes {
		return nil, fmt.Errorf("%s is too large to edit (the limit is %d bytes)", rel, maxEditBytes)
	}
	return data, nil
}

// mkdirParent creates the missing directories above rel. Resolve has already
// refused links among the existing ones.
func (ft *fileTools) mkdirParent(rel string) error {
	dir := path.Dir(rel)
	if dir == "." {
		return nil
	}
	if err := ft.w.MkdirAll(dir, 0o700); err != nil {
		return ioFailure("create directory", dir, err)
	}
	return nil
}

// occurrences returns the byte offsets where sub starts in b, overlapping
// ones included: "aa" in "aaa" is ambiguous, not unique.
func occurrences(b, sub []byte) []int {
	var at []int
	for i := 0; i <= len(b)-len(sub); {
		j := bytes.Index(b[i:], sub)
		if j < 0 {
			break
		}
		at = append(at, i+j)
		i += j + 1
	}
	return at
}

func lineOf(b []byte, off int) int { return bytes.Count(b[:off], []byte{'\n'}) + 1 }

func lineList(b []byte, at []int) string {
	nums := make([]string, 0, maxLinesShown+1)
	for k, off := range at {
		if k == maxLinesShown {
			nums = append(nums, "…")
			break
		}
		nums = append(nums, fmt.Sprint(lineOf(b, off)))
	}
	if len(at) == 1 {
		return "line " + nums[0]
	}
	return "lines " + strings.Join(nums, ", ")
}

// mismatchHint names the likely reason an exact match failed, so the model's
// next try is informed rather than blind.
func mismatchHint(content []byte, oldText string) string {
	switch {
	case bytes.Contains(content, []byte("\r\n")) && strings.Contains(oldText, "\n") && !strings.Contains(oldText, "\r\n"):
		return " (the file has Windows line endings, \\r\\n)"
	case strings.TrimSpace(oldText) != oldText && strings.TrimSpace(oldText) != "" &&
		bytes.Contains(content, []byte(strings.TrimSpace(oldText))):
		return " (it occurs without the leading or trailing whitespace; copy the text exactly)"
	case bytes.Contains(bytes.ToLower(content), []byte(strings.ToLower(oldText))):
		return " (it occurs with different letter case; copy the text exactly)"
	}
	return "; read the file and copy the text exactly"
}
