// Package consolidator owns the first stage of dreamgate's memory: token
// counting (Counter) and the Consolidator, which keeps a session's prompt
// within its token budget by archiving its oldest turns as summaries in
// memory/history.jsonl. The archive itself (its format, cursors and
// compaction) belongs to package history, whose Store it writes through.
//
// Token counts are cl100k_base, offline. The vocabulary costs about 6 MB of
// resident memory, so it is loaded only when a byte bound cannot decide:
// Maybe, RecentHistory and ObservePrompt on a small chat never load it;
// Estimate (an exact figure, for /status) always may. The per-turn hard-limit
// check belongs to Maybe's Report.OverLimit.
//
// Dream reads the same archive through history.Store; the gateway drives the
// Consolidator before and after each turn. This package must not import
// gateway or dream; of dreamgate's packages it uses only history, workspace
// (through history) and llm. Third-party types (the tokenizer) never appear
// in its exported API.
package consolidator
