package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/dreamgate/dreamgate/workspace"
	workspacetemplate "github.com/dreamgate/dreamgate/workspace-template"
)

// stateFile is a file the program keeps in a workspace for itself, and the
// one package that writes it.
type stateFile struct {
	path string // slash-separated, relative to the workspace; "dir/" a whole directory
	// writer is the package that writes it, the only one (besides
	// workspace, which names it) whose code may name it.
	writer string
	// name is the workspace layout constant that names it ("" when the
	// writer names it itself: gitstore imports nothing of ours).
	name string
}

// stateFiles is every program-private file of a workspace with its one
// writer. A new private file needs a row here, a place in
// workspace.ProgramFiles (so no tool writes it), and one writing package;
// ARCHITECTURE.md's table of state files says the same for readers.
var stateFiles = []stateFile{
	{workspace.History, "history", "History"},
	{workspace.Cursor, "history", "Cursor"},
	{workspace.HistoryIndex, "history", "HistoryIndex"},
	{workspace.HistoryLock, "history", "HistoryLock"},
	// Written through history.(*Store).SetDreamCursor, which only the
	// Dream ledger calls (checked below).
	{workspace.DreamCursor, "history", "DreamCursor"},
	{workspace.DreamLedger, "dream", "DreamLedger"},
	{workspace.DreamLock, "dream", "DreamLock"},
	// The ledger's short lock, held by every write of the record.
	{workspace.DreamLedgerLock, "dream", "DreamLedgerLock"},
	// The copy of a scope's files a running Dream edits; removed when the
	// step lands, and by the next Dream after a kill.
	{workspace.DreamStage + "/", "dream", "DreamStage"},
	// Read once by the ledger, into itself, and removed; nothing writes them.
	{workspace.LegacyDreamState, "dream", "LegacyDreamState"},
	{workspace.LegacyDreamIntent, "dream", "LegacyDreamIntent"},
	{workspace.LegacyDreamDeep, "dream", "LegacyDreamDeep"},
	{workspace.GitDir + "/", "gitstore", ""},
	{workspace.GitIgnore, "gitstore", ""},
}

// covered reports whether rel (a file path) is a state file of the table.
func covered(rel string) bool {
	for _, f := range stateFiles {
		if rel == f.path || (strings.HasSuffix(f.path, "/") && strings.HasPrefix(rel, f.path)) {
			return true
		}
	}
	return false
}

// The table and workspace.ProgramFiles list the same files: every state
// file is kept from the tools, and every file kept from the tools has a
// writer.
func TestStateFilesAreTheProgramFiles(t *testing.T) {
	program := workspace.ProgramFiles()
	for _, f := range stateFiles {
		ok := slices.Contains(program, f.path)
		for _, p := range program {
			if m, _ := filepath.Match(strings.ReplaceAll(p, "**/", ""), f.path); m {
				ok = true // memory/**/*.lock
			}
		}
		if !ok {
			t.Errorf("%s (written by %s) is not in workspace.ProgramFiles: a tool could write it", f.path, f.writer)
		}
	}
	for _, p := range program {
		if strings.Contains(p, "*") {
			continue // a pattern; its files are rows of their own
		}
		if !covered(p) {
			t.Errorf("workspace.ProgramFiles lists %s, which has no writer in stateFiles", p)
		}
	}
}

// In the code (tests aside), a state file's layout constant is named only
// by its writer's package, and the history store's dream-cursor write is
// called only by the Dream ledger.
func TestStateFilesHaveOneWriter(t *testing.T) {
	root := filepath.Join("..", "..")
	owner := map[string]string{}
	for _, f := range stateFiles {
		if f.name != "" {
			owner[f.name] = f.writer
		}
	}
	// A private file's path spelled out instead of named through the
	// layout.
	literal := regexp.MustCompile(`^memory/\.[a-z_.]+$`)
	fset := token.NewFileSet()
	parsed := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		pkg := filepath.ToSlash(filepath.Dir(rel))
		file, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		parsed++
		wsName := ""
		for _, imp := range file.Imports {
			if path, _ := strconv.Unquote(imp.Path.Value); path == module+"/workspace" {
				wsName = "workspace"
				if imp.Name != nil {
					wsName = imp.Name.Name
				}
			}
		}
		ast.Inspect(file, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok && wsName != "" && x.Name == wsName {
					if w, ok := owner[n.Sel.Name]; ok && pkg != w {
						t.Errorf("%s names workspace.%s, which only %s writes", rel, n.Sel.Name, w)
					}
				}
			case *ast.CallExpr:
				// A copy between engines (store/copy.go: migrate, export)
				// writes the cursor its source holds, while no process
				// writes; the conformance suite (store/storetest) is tests.
				copies := rel == "store/copy.go" || pkg == "store/storetest"
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "SetDreamCursor" && rel != "dream/ledger.go" && !copies {
					t.Errorf("%s: %s calls SetDreamCursor; only the Dream ledger (dream/ledger.go) moves the Dream cursor", rel, fset.Position(n.Pos()))
				}
			case *ast.BasicLit:
				if s, err := strconv.Unquote(n.Value); err == nil && n.Kind == token.STRING && literal.MatchString(s) && pkg != "workspace" {
					t.Errorf("%s: %s spells out the private file %q; name it through the workspace layout", rel, fset.Position(n.Pos()), s)
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if parsed < 50 {
		t.Fatalf("parsed %d files: the walk missed the tree", parsed)
	}
}

// checkStateFiles: after real use, every file in the workspace is a file
// people edit (the template's, the tracked ones) or a state file of the
// table. A file the program leaves there without a row fails here.
func checkStateFiles(t *testing.T, ws string) {
	t.Helper()
	people := map[string]bool{}
	for _, f := range workspace.TrackedFiles() {
		people[f] = true
	}
	_ = fs.WalkDir(workspacetemplate.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			people[p] = true
		}
		return nil
	})
	err := filepath.WalkDir(ws, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(ws, p)
		rel = filepath.ToSlash(rel)
		if slices.ContainsFunc(workspace.TrackedPatterns(), func(pat string) bool { m, _ := path.Match(pat, rel); return m }) {
			return nil // a scope's memory file, or a cold memory
		}
		if !people[rel] && !covered(rel) {
			t.Errorf("the workspace holds %s, which is neither a file people edit nor a state file with a writer", rel)
		}
		return nil
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
}
