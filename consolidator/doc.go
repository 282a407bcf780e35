// Package consolidator owns the first stage of dreamgate's memory: the
// archive memory/history.jsonl (the Store, the only code that reads or writes
// that file and its cursor files), token counting (Counter), and the
// Consolidator, which keeps a session's prompt within its token budget by
// archiving its oldest turns as summaries in history.jsonl.
//
// The archive format is nanobot's, byte for byte, so an existing nanobot
// workspace keeps working: one JSON object a line with cursor, timestamp,
// content and an optional session_key; memory/.cursor holds the last cursor
// handed out and memory/.dream_cursor the highest one Dream has consumed.
//
// Token counts are cl100k_base, offline. The vocabulary costs about 6 MB of
// resident memory, so it is loaded only when a byte bound cannot decide:
// Maybe, RecentHistory and ObservePrompt on a small chat never load it;
// Estimate (an exact figure, for /status) always may. The per-turn hard-limit
// check belongs to Maybe's Report.OverLimit.
//
// Dream reads the archive through Store; the gateway drives the Consolidator
// before and after each turn. This package must not import gateway or dream
// (nor anything above llm in DESIGN.md's table); third-party types (flock,
// the tokenizer) never appear in its exported API.
package consolidator
