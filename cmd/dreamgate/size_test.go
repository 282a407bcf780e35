package main

import (
	"bufio"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// No function the binary can reach calls reflect's Method or MethodByName
// with a name only known at run time: one that did (html/template's
// field evaluation, when the memory page used it) made the linker keep
// every exported method of every type that can reach an interface, in the
// whole program, for 6.4 MB of make build's 30.4. The linker marks such
// functions <ReflectMethod> in its -dumpdep output; this names them.
func TestNoMethodKeptForReflection(t *testing.T) {
	cmd := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-ldflags=-dumpdep", "-o", os.DevNull, ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var marked []string
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		// "caller <ReflectMethod> -> callee" or "caller -> callee <ReflectMethod>":
		// the function named just before the mark.
		before, _, ok := strings.Cut(sc.Text(), " <ReflectMethod>")
		if f := strings.Fields(before); ok && len(f) > 0 && !slices.Contains(marked, f[len(f)-1]) {
			marked = append(marked, f[len(f)-1])
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("go build -ldflags=-dumpdep: %v", err)
	}
	if len(marked) > 0 {
		t.Errorf("these functions make the linker keep every exported method (reflect's Method/MethodByName): %s", strings.Join(marked, ", "))
	}
}

// The product counts tokens with internal/tokens' compact vocabulary:
// tiktoken-go's (a Go map literal of 100,256 strings) cost 3.5 MB of the
// binary and 6.8 MB of memory once built, and stays the reference in
// internal/tokens' tests only.
func TestNoTokenizerLibraryLinked(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/tiktoken-go/") {
			t.Errorf("dreamgate links %s: count with internal/tokens", dep)
		}
	}
}
