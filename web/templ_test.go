package web

import (
	"bytes"
	"go/format"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/a-h/templ"
	"github.com/a-h/templ/generator"
	parser "github.com/a-h/templ/parser/v2"
)

// The pages' Go (*_templ.go) is generated from the templates (*.templ)
// and committed, so that building needs no generator. Each committed file
// must be what `make templ` makes of its template now, with the templ
// version go.mod names (the generator is the same module as the runtime
// the pages link): an edited template whose Go was not generated again, a
// hand edit of the Go, or a template removed with its Go left behind all
// fail here.
func TestTemplatesGenerated(t *testing.T) {
	templates, err := filepath.Glob("*.templ")
	if err != nil || len(templates) == 0 {
		t.Fatalf("no templates found: %v", err)
	}
	want := map[string]bool{}
	for _, name := range templates {
		goName := strings.TrimSuffix(name, ".templ") + "_templ.go"
		want[goName] = true
		tf, err := parser.Parse(name)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var b bytes.Buffer
		// As `templ generate -path web` does: the version stamped, file
		// names relative to web/.
		if _, err := generator.Generate(tf, &b, generator.WithVersion(templ.Version()), generator.WithFileName(name)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		gen, err := format.Source(b.Bytes())
		if err != nil {
			t.Fatalf("%s: the generated Go does not parse: %v", name, err)
		}
		committed, err := os.ReadFile(goName)
		if err != nil {
			t.Errorf("%s has no generated %s: run make templ and commit it", name, goName)
			continue
		}
		if !bytes.Equal(committed, gen) {
			t.Errorf("%s is not what %s generates now: run make templ and commit the result", goName, name)
		}
	}
	generated, _ := filepath.Glob("*_templ.go")
	for _, g := range generated {
		if !want[g] {
			t.Errorf("%s has no template %s: remove it (make templ does)", g, strings.TrimSuffix(g, "_templ.go")+".templ")
		}
	}
}
