package gitstore_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoOtherDreamgatePackage keeps gitstore at the bottom of the
// layer table: it may use go-git, never another package of ours. The
// internal/* leaves sit outside the layers and import nothing of ours
// (cmd/dreamgate's layer test checks that), so gitstore may use them: a
// package of ours reached through one would still be listed here.
func TestImportsNoOtherDreamgatePackage(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	const self = "github.com/dreamgate/dreamgate/gitstore"
	out, err := exec.Command(goBin, "list", "-deps", self).CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for dep := range strings.FieldsSeq(string(out)) {
		if strings.HasPrefix(dep, "github.com/dreamgate/dreamgate") && dep != self &&
			!strings.HasPrefix(dep, "github.com/dreamgate/dreamgate/internal/") {
			t.Errorf("gitstore depends on %s", dep)
		}
	}
}
