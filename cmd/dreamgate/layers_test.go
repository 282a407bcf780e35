package main

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/dreamgate/dreamgate"

// layers is ARCHITECTURE.md's table, top to bottom: a package may import
// only packages of layers below its own (and its own family, within the
// limits of sameFamilyOK). workspace sits below agent, because agent's file
// tools work on the workspace's confined root, and so below gitstore too,
// which still may not import it (see forbidden).
var layers = []string{
	"cmd", "metrics", "web", "eval", "gateway", "mcp", "consolidator", "dream", "recall", "memory", "history", "store", "gitstore", "agent", "workspace", "llm", "channels", "workspace-template", "audience",
}

// forbidden pairs beyond the order: the two memory stages never import each
// other (history.jsonl is shared through the history leaf package both
// import), and gitstore imports no package of ours (it wraps go-git and
// nothing else), though workspace ranks below it: its caller passes the
// tracked files and the workspace's atomic write in.
var forbidden = map[[2]string]bool{
	{"consolidator", "dream"}: true,
	{"dream", "consolidator"}: true,
	// eval holds the pure parts of `dreamgate eval`; playing scenarios
	// through the pipeline is cmd's job.
	{"eval", "gateway"}:       true,
	{"eval", "consolidator"}:  true,
	{"eval", "dream"}:         true,
	{"gitstore", "workspace"}: true,
}

// selfContained families import no package of ours: metrics ranks just
// below cmd, so only cmd may import it, and it learns of the others only
// through what cmd passes in; audience ranks last, so every layer may use
// it (the channels derive audiences, the memory above keeps scopes).
var selfContained = map[string]bool{"metrics": true, "audience": true}

// leafFamily holds small helpers (internal/backoff) that sit outside the
// layers: any package may import them, and they import nothing of ours.
const leafFamily = "internal"

// formatLeaves are packages of a layer that hold a file format alone and,
// like the internal leaves, import nothing of ours, so that any package
// may read the format: memory/memline, the memory line, which the memory
// package owns and the rule-following fake model (llm/llmtest) reads as a
// model reads a prompt.
var formatLeaves = map[string]bool{module + "/memory/memline": true}

func family(pkg string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(pkg, module), "/")
	first, _, _ := strings.Cut(rel, "/")
	return first
}

func rank(fam string) int {
	for i, l := range layers {
		if l == fam {
			return i
		}
	}
	return -1
}

// sameFamilyOK: a subpackage may use its family's root and its ancestors
// (channels/slack -> channels, llm/llmtest -> llm); gateway and cmd may use
// their own subpackages; an adapter never imports a sibling adapter, and a
// contract package never imports its implementations. Tests may also use
// their package's fakes (fakeslack, llmtest), checked by the caller.
func sameFamilyOK(from, to string) bool {
	fam := family(from)
	root := module + "/" + fam
	switch {
	case to == root:
		return true
	case strings.HasPrefix(to, from+"/"):
		return fam == "gateway" || fam == "cmd"
	case strings.HasPrefix(from, to+"/"):
		return true
	default:
		return false
	}
}

func TestImportDirection(t *testing.T) {
	out, err := exec.Command("go", "list", "-f",
		`{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}}|{{join .XTestImports " "}}`,
		module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	seen := 0
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		from := parts[0]
		fromFam := family(from)
		if fromFam == leafFamily || formatLeaves[from] {
			for _, imp := range strings.Fields(parts[1]) {
				if strings.HasPrefix(imp, module+"/") {
					t.Errorf("%s imports %s: a leaf package imports nothing of ours", from, imp)
				}
			}
			continue
		}
		if rank(fromFam) < 0 {
			t.Errorf("package %s is in no layer; add it to this table and ARCHITECTURE.md's if it earns its place", from)
			continue
		}
		seen++
		isTestOf := map[string]bool{}
		for _, imp := range strings.Fields(parts[2] + " " + parts[3]) {
			isTestOf[imp] = true
		}
		for _, imp := range strings.Fields(parts[1] + " " + parts[2] + " " + parts[3]) {
			if !strings.HasPrefix(imp, module+"/") || imp == from {
				continue
			}
			toFam := family(imp)
			switch {
			case toFam == leafFamily || formatLeaves[imp]:
				// a leaf: allowed from anywhere
			case selfContained[fromFam] && toFam != fromFam:
				t.Errorf("%s imports %s: %s imports no package of ours", from, imp, fromFam)
			case forbidden[[2]string{fromFam, toFam}]:
				t.Errorf("%s imports %s: %s and %s must never import each other", from, imp, fromFam, toFam)
			case toFam == fromFam:
				if !sameFamilyOK(from, imp) && !isTestOf[imp] {
					t.Errorf("%s imports %s: not allowed within %s", from, imp, fromFam)
				}
			case rank(toFam) < rank(fromFam):
				t.Errorf("%s imports %s, which is above it: imports point down the layers", from, imp)
			}
		}
	}
	if seen < len(layers) {
		t.Fatalf("go list saw only %d packages; the check is not looking at the module", seen)
	}
}

func TestLayerRulesCatchViolations(t *testing.T) {
	// The rules themselves must be able to fail.
	if rank(family(module+"/llm")) <= rank(family(module+"/gateway")) {
		t.Fatal("llm should rank below gateway")
	}
	if sameFamilyOK(module+"/channels/slack", module+"/channels/discord") {
		t.Error("an adapter importing a sibling adapter must be refused")
	}
	if sameFamilyOK(module+"/channels", module+"/channels/slack") {
		t.Error("the contract importing an implementation must be refused")
	}
	if !sameFamilyOK(module+"/channels/slack", module+"/channels") {
		t.Error("an adapter may import its contract")
	}
	if family(module+"/internal/backoff") != leafFamily || rank(leafFamily) >= 0 {
		t.Error("internal/* must be the leaf family, outside the layers")
	}
	if rank(family(module+"/metrics")) != rank("cmd")+1 || !selfContained["metrics"] {
		t.Error("metrics must rank just below cmd (only cmd imports it) and import nothing of ours")
	}
	if rank(family(module+"/web")) <= rank("metrics") || rank(family(module+"/web")) >= rank("gateway") {
		t.Error("web must rank below cmd and metrics (only cmd imports it) and above gateway, whose parts it reads")
	}
	if rank(family(module+"/audience")) != len(layers)-1 || !selfContained["audience"] {
		t.Error("audience must rank last (channels and workspace use it) and import nothing of ours")
	}
	if !forbidden[[2]string{"dream", "consolidator"}] {
		t.Error("dream -> consolidator must be forbidden")
	}
	if !forbidden[[2]string{"eval", "gateway"}] {
		t.Error("eval -> gateway must be forbidden")
	}
	if rank(family(module+"/history")) <= rank(family(module+"/dream")) ||
		rank(family(module+"/history")) <= rank(family(module+"/consolidator")) {
		t.Error("history must rank below both memory stages that share it")
	}
	if rank(family(module+"/workspace")) <= rank(family(module+"/agent")) ||
		rank(family(module+"/workspace")) <= rank(family(module+"/history")) {
		t.Error("workspace must rank below agent and history, which use it")
	}
	if family(module+"/workspace-template") == family(module+"/workspace") {
		t.Error("workspace-template is a family of its own, not workspace's")
	}
}
