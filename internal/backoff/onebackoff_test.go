package backoff

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// Every retry and restart of dreamgate waits Delay: a delay doubled by
// hand (d *= 2, 2*delay, base<<n) beside it is a second policy with its
// own cap and overflow to get right. The product's Go files are read for
// a doubling of a variable named like a wait (delay, backoff, wait,
// sleep); this package and tests are exempt.
func TestNoHandWrittenBackoff(t *testing.T) {
	root := filepath.Join("..", "..")
	waitName := func(e ast.Expr) bool {
		id, ok := e.(*ast.Ident)
		if !ok {
			return false
		}
		n := strings.ToLower(id.Name)
		for _, w := range []string{"delay", "backoff", "wait", "sleep"} {
			if strings.Contains(n, w) {
				return true
			}
		}
		return false
	}
	two := func(e ast.Expr) bool {
		lit, ok := e.(*ast.BasicLit)
		return ok && lit.Kind == token.INT && lit.Value == "2"
	}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") || filepath.Dir(path) == "." {
			return nil
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var bad bool
			switch x := n.(type) {
			case *ast.BinaryExpr:
				bad = x.Op == token.SHL && waitName(x.X) ||
					x.Op == token.MUL && (two(x.X) && waitName(x.Y) || waitName(x.X) && two(x.Y))
			case *ast.AssignStmt:
				bad = (x.Tok == token.MUL_ASSIGN || x.Tok == token.SHL_ASSIGN) && len(x.Lhs) == 1 && waitName(x.Lhs[0])
			}
			if bad {
				rel, _ := filepath.Rel(root, fset.Position(n.Pos()).Filename)
				t.Errorf("%s:%d doubles a wait by hand; use internal/backoff.Delay", rel, fset.Position(n.Pos()).Line)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
