package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// memoryFileNames are the workspace layout's names of a scope's memory
// files (its hot files and cold memory).
var memoryFileNames = map[string]bool{"Soul": true, "User": true, "Memory": true, "Cold": true, "MemoryFiles": true}

// memoryFileUsers are the packages whose code may name a scope's memory
// files through the workspace layout: the layout itself, the memory
// package that reads them for everyone, the agent's file tools (the
// policy of what a chat turn or Dream's phase 2 may edit), Dream, which
// writes them (its edits, stamping, cold memory, deep Dream), and
// gitstore's callers' tracked list. Anyone else asks package memory.
var memoryFileUsers = map[string]bool{"workspace": true, "memory": true, "agent": true, "dream": true}

// Nothing but package memory reads a scope's memory files: in the code
// (tests aside), the prompt, the commands, recall and the memory page never
// name them through the workspace layout, and nothing but cmd (which
// wires one memory for the process) opens the workspace as memory.
func TestOnlyMemoryReadsTheMemoryFiles(t *testing.T) {
	root := filepath.Join("..", "..")
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
		pkg, _, _ := strings.Cut(rel, "/")
		file, err := parser.ParseFile(fset, p, nil, 0)
		if err != nil {
			return err
		}
		parsed++
		names := map[string]string{} // local name -> import path
		for _, imp := range file.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			name := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				name = imp.Name.Name
			}
			names[name] = path
		}
		ast.Inspect(file, func(n ast.Node) bool {
			sel, ok := n.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			x, ok := sel.X.(*ast.Ident)
			if !ok {
				return true
			}
			switch names[x.Name] {
			case module + "/workspace":
				if memoryFileNames[sel.Sel.Name] && !memoryFileUsers[pkg] {
					t.Errorf("%s: %s names workspace.%s; ask package memory for a scope's files", rel, fset.Position(sel.Pos()), sel.Sel.Name)
				}
			case module + "/memory":
				if sel.Sel.Name == "NewDisk" && pkg != "cmd" && pkg != "gateway" && pkg != "dream" && pkg != "memory" {
					t.Errorf("%s: %s opens the workspace as memory itself; take the process's memory from cmd", rel, fset.Position(sel.Pos()))
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
