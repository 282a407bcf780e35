// Package gitstore is the memory repository: a git repository at the
// workspace that versions exactly the files its caller names (dreamgate
// names the files Dream edits, SOUL.md, USER.md, memory/MEMORY.md, and the
// instructions, AGENTS.md and prompts/dream.md) and the files its patterns
// match wherever they appear (every scope folder's memory files,
// scopes/*/SOUL.md and so on) so every change can be shown and undone.
//
// It is responsible for creating or adopting the repository (refusing one
// nested in another repository), keeping a .gitignore that tracks only those
// files (an older one gets the lines it lacks appended, once, committed and
// logged), committing real changes only, reading first-parent history,
// diffing commits and the working files, and undoing a commit's change
// line by line as a new commit (linerevert.go), saying afterwards which
// restore undid a commit (UndoneBy). The result stays valid for the git
// command line:
// `git log`, `git fsck --full` and `git status` agree with what the Store
// did.
//
// Every read and write can be limited to some files, by a path filter
// (keep func(path string) bool; nil is every file) or a list: dreamgate
// keeps each audience's memory in its own folder, and an audience may see
// and undo only the commits of the folders it may read. Log, Latest and
// UndoneBy list only the commits that changed a file the filter accepts;
// Show and Status cut their diffs to those files, never reading the
// others; Restore and PlanRestore undo, save the hand edits of, commit and
// name only those; CommitPaths commits the listed files alone. A filtered
// caller must not show a commit's Body, which was written for every file
// of the commit: what may be shown is in the cut Diff.
//
// Writes never discard anything: a restore first commits uncommitted edits
// of the tracked files as "manual: edits outside Dream", history is never
// rewritten, and files the repository does not track (history.jsonl,
// cursors, notes) are never touched. Commits are built from the tracked files
// alone (like `git commit -- <paths>`): whatever else someone staged with the
// git command line stays staged and out of our commits.
//
// With Options.Lines, each folder of that folder (a memory scope's) has a
// line of history of its own on refs/<Lines>/<name>, and the branch HEAD
// names holds the other files (lines.go): a scope's commit writes its own
// few objects, however many scopes there are. The lines read as one
// history — Head, Log, CommitsAfter, FileAt and Checkout span them — in
// the order the commits were made; a write across lines moves their refs
// at once (the refs' journal, files.go). A repository whose branch holds
// every scope (an earlier version's) is given its lines once, at Open.
//
// go-git writes every object as a file of its own and never packs; Pack
// moves them into a pack file once there are thousands (see PackThreshold).
//
// Reading history does not walk it: the Store keeps a cache of the
// history of every line (id, parent, time, line, subject, and the paths of
// the tracked files each commit changed) in <gitdir>/dreamgate-commits,
// extends it on each of its commits, and checks it against the refs before
// each use. Commits made with the git command line are picked up by walking
// back from a ref to the newest commit the cache knows; a missing, damaged
// or disagreeing cache is rebuilt from the history. The repository stays
// the authority: commits found through the cache are read back and
// checked.
//
// Concurrency: a Store serialises its own methods. Across processes, writes
// take the repository's index.lock (as git does) and move the branch with a
// compare-and-swap, so a concurrent writer yields ErrLocked or
// ErrConcurrentUpdate instead of a lost commit. An index.lock older than ten
// minutes is taken for a crash leftover; a caller that knows sooner (Dream,
// under its own lock) removes it with ClearStaleLocks.
//
// Refs are written as git writes them, not as go-git does (in place): the
// new value into <ref>.lock, synced, then renamed over the ref, so a kill
// leaves the old value or the new one (Options.AfterWrite reports both
// steps, PointRefLock and PointRef). A HEAD or branch found empty, torn,
// naming a commit the repository lacks, or missing while commits exist
// (an older version, a power loss, another tool) is put back from the
// repository's own records and logged; a repository holding commits is
// never started afresh: when nothing says which commit the branch named,
// every method fails with ErrDamaged and changes nothing.
//
// gitstore wraps go-git; go-git types never appear in its API. It imports no
// other dreamgate package but the internal leaves (internal/leftovers, which
// import none): the caller names the tracked files (Options.Tracked and
// Options.Patterns, the workspace layout's) and passes the writer a restore
// rewrites files through (Options.Files, the workspace's atomic write).
package gitstore
