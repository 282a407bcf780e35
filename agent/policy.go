package agent

import (
	"path"
	"slices"
	"strings"

	"github.com/dreamgate/dreamgate/workspace"
)

// Policy says which workspace paths the file tools may touch. The zero Policy
// allows every path inside the workspace (links and escapes are refused
// regardless).
//
// Entries are workspace-relative, slash-separated paths, compared after
// cleaning ("./memory//x" is "memory/x"):
//   - "dir/" (trailing slash): the directory and everything below it;
//   - a pattern with *, ? or [ ] (path.Match syntax per component, plus "**"
//     for any number of directories): every path it matches and everything
//     below such a path;
//   - anything else: that exact path and everything below it (so a denied
//     file cannot be turned into a directory either).
//
// DenyRead and DenyWrite compare case-insensitively, because on the
// case-insensitive file systems of macOS and Windows "MEMORY/History.jsonl"
// is the denied file. Allow compares exactly: a case-insensitive Allow would
// let a model create "soul.md" beside "SOUL.md" on Linux.
type Policy struct {
	// Allow, when non-empty, lists the exact paths the tools may read and
	// write; nothing else is reachable (not even the directories holding
	// them).
	Allow []string
	// AllowWrite, when non-empty, lists the exact paths the tools may
	// write; everything else stays readable (under the other rules) but
	// not writable.
	AllowWrite []string
	// DenyWrite lists paths never written.
	DenyWrite []string
	// DenyRead lists paths never read. A path that may not be read may not
	// be written either: a write would clobber what the model cannot see.
	DenyRead []string
}

// ChatPolicy is the policy of chat turns: the whole workspace is readable
// except the git repository, and the files dreamgate itself maintains (the
// history archive, the cursors, lock files, the repository) are never written.
func ChatPolicy() Policy {
	return Policy{
		DenyWrite: workspace.ProgramFiles(),
		DenyRead:  workspace.PrivateFiles(),
	}
}

// ChatGuestPolicy is the policy of chat turns from people who are not
// admins: everything ChatPolicy may read, but only the three memory files
// may be written. The files that instruct the assistant and Dream
// (AGENTS.md, prompts/) stay as the operator wrote them; the memory files
// are versioned, so a bad edit shows in /dream-log and can be undone.
func ChatGuestPolicy() Policy {
	p := ChatPolicy()
	p.AllowWrite = workspace.MemoryFiles()
	return p
}

// DreamPolicy is the policy of Dream phase 2: exactly the three memory files
// Dream edits, nothing else.
func DreamPolicy() Policy {
	return Policy{Allow: workspace.MemoryFiles()}
}

// check applies the policy to rel, a path already cleaned by cleanPath.
func (p Policy) check(rel string, write bool) error {
	if len(p.Allow) > 0 && !p.allows(rel) {
		return &pathError{ErrNotAllowed, quote(rel) + " is not one of the files this tool may use (" +
			strings.Join(p.Allow, ", ") + ")."}
	}
	if write && len(p.AllowWrite) > 0 && !slices.ContainsFunc(p.AllowWrite, func(a string) bool { return path.Clean(a) == rel }) {
		return &pathError{ErrNotAllowed, "In this conversation only " + strings.Join(p.AllowWrite, ", ") +
			" may be written; " + quote(rel) + " can be changed by an admin."}
	}
	if matchAny(p.DenyRead, rel) {
		return &pathError{ErrNotAllowed, quote(rel) + " is private to dreamgate and may not be accessed."}
	}
	if write && matchAny(p.DenyWrite, rel) {
		return &pathError{ErrNotAllowed, quote(rel) + " is maintained by dreamgate and may not be written."}
	}
	return nil
}

func (p Policy) allows(rel string) bool {
	for _, a := range p.Allow {
		if path.Clean(a) == rel {
			return true
		}
	}
	return false
}

// hidden reports whether rel is unreadable under the policy; list_dir hides
// such entries rather than show what cannot be opened.
func (p Policy) hidden(rel string) bool {
	if len(p.Allow) > 0 && !p.allows(rel) {
		return true
	}
	return matchAny(p.DenyRead, rel)
}

// matchAny reports whether rel falls under any of the entries.
func matchAny(entries []string, rel string) bool {
	if len(entries) == 0 || rel == "." {
		return false
	}
	relParts := strings.Split(strings.ToLower(rel), "/")
	for _, e := range entries {
		e = strings.ToLower(path.Clean(e))
		if e == "." {
			// A policy entry naming the workspace itself covers everything.
			return true
		}
		if matchPrefix(strings.Split(e, "/"), relParts) {
			return true
		}
	}
	return false
}

// matchPrefix reports whether pat matches rel or one of rel's ancestors, so an
// entry covers its whole subtree.
func matchPrefix(pat, rel []string) bool {
	if len(pat) == 0 {
		return true
	}
	if pat[0] == "**" {
		for i := 0; i <= len(rel); i++ {
			if matchPrefix(pat[1:], rel[i:]) {
				return true
			}
		}
		return false
	}
	if len(rel) == 0 {
		return false
	}
	ok, err := path.Match(pat[0], rel[0])
	if err != nil {
		// A malformed deny pattern must not open a hole: treat it as a match.
		ok = true
	}
	return ok && matchPrefix(pat[1:], rel[1:])
}

// hasMeta reports whether a policy entry is a pattern rather than a path.
func hasMeta(e string) bool { return strings.ContainsAny(e, "*?[") }
