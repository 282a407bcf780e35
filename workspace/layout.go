package workspace

import "github.com/dreamgate/dreamgate/audience"

// Paths inside a workspace, slash-separated and relative to its root.
const (
	Soul   = "SOUL.md"
	User   = "USER.md"
	Memory = "memory/MEMORY.md"
	Agents = "AGENTS.md"
	// Cold is a scope's cold memory: the lines that leave the memory files
	// for good, kept searchable. The memory repository tracks it in the
	// root and in every scope folder wherever it appears.
	Cold = "memory/COLD.md"

	// MemoryDir holds MEMORY.md and the program's own files below.
	MemoryDir = "memory"
	// History is the append-only archive the Consolidator writes and Dream
	// reads: nanobot's format, one JSON object a line.
	History = "memory/history.jsonl"
	// Cursor holds the last cursor handed out in History.
	Cursor = "memory/.cursor"
	// DreamCursor holds the highest cursor Dream has consumed.
	DreamCursor = "memory/.dream_cursor"
	// DreamLedger is Dream's progress per memory scope (failures, findings
	// left, skips, last run) and the running Dream's intent, in one record
	// that only dream.Ledger writes.
	DreamLedger = "memory/.dream_ledger"
	// DreamLedgerLock is the ledger's short lock: held by every writer of
	// DreamLedger for one write (dream.Ledger), apart from DreamLock, which
	// a running Dream holds throughout.
	DreamLedgerLock = "memory/.dream_ledger.lock"
	// DreamStage holds the copy of a scope's memory files that a Dream
	// edits (phase 2, the deep Dream): the files themselves change only
	// when the step is committed, from the commit.
	DreamStage = "memory/.dream_stage"
	// LegacyDreamState and LegacyDreamIntent held parts of that progress
	// before the ledger; the ledger reads them once, into itself, and
	// removes them.
	LegacyDreamState  = "memory/.dream_state"
	LegacyDreamIntent = "memory/.dream_intent"
	// LegacyDreamDeep listed the scopes waiting for a deep Dream, apart
	// from the ledger; the ledger reads it once and removes it.
	LegacyDreamDeep = "memory/.dream_deep"
	// HistoryLock and DreamLock are the cross-process locks of the history
	// store and of Dream's single flight.
	HistoryLock = "memory/.history.lock"
	DreamLock   = "memory/.dream.lock"
	// HistoryIndex is the history store's private, rebuildable index of
	// History: where the entries Dream has not read begin, and a table of
	// them (place, cursor, session) so that a start need not read them.
	HistoryIndex = "memory/.history_index"
	// DreamGuide optionally replaces the built-in Dream guidance.
	DreamGuide = "prompts/dream.md"
	// GitDir and GitIgnore are the memory repository.
	GitDir    = ".git"
	GitIgnore = ".gitignore"
)

// MemoryFiles are the files Dream edits and every chat prompt shows, in
// the order they are shown: the assistant's voice, the user, the memory.
// The memory repository tracks them (gitstore adds its own .gitignore).
func MemoryFiles() []string { return []string{Soul, User, Memory} }

// TrackedFiles are the files the memory repository versions: the memory
// files, and the files that instruct the assistant and Dream (AGENTS.md and
// prompts/dream.md). Any change to them shows in /dream-log and can be
// undone, whoever made it.
func TrackedFiles() []string { return append(MemoryFiles(), Agents, DreamGuide) }

// TrackedPatterns are the further files the memory repository versions
// whenever they exist, a '*' standing for one folder name: every scope
// folder's memory files (scopes/<name>/SOUL.md, USER.md, memory/MEMORY.md)
// and the cold memory of the root and of each scope. The repository
// creates none of them: a scope's folder appears on its first use, and
// its first commit is the one after that.
func TrackedPatterns() []string {
	out := []string{Cold}
	for _, f := range append(MemoryFiles(), Cold) {
		out = append(out, audience.ScopesDir+"/*/"+f)
	}
	return out
}

// ProgramFiles are maintained by dreamgate alone: no tool may write them.
// Entries use agent.Policy's syntax ("dir/" is a whole directory, "**" any
// number of directories): the archive, its cursors, Dream's state, lock
// files and the memory repository.
func ProgramFiles() []string {
	return []string{
		History,
		Cursor,
		DreamCursor,
		DreamLedger,
		DreamStage + "/",
		HistoryIndex,
		LegacyDreamState,
		LegacyDreamIntent,
		LegacyDreamDeep,
		MemoryDir + "/**/*.lock",
		GitDir + "/",
		GitIgnore,
	}
}

// PrivateFiles may not even be read by a tool: the memory repository's
// internals, and the copy a running Dream edits.
func PrivateFiles() []string { return []string{GitDir + "/", DreamStage + "/"} }
