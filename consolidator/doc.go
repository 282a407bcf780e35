// Package consolidator owns the first stage of dreamgate's memory: token
// counting (Counter) and the Consolidator, the one owner of the prompt's
// token budget — the model's window and the conversation's own budget,
// Config.ConversationTokens: it keeps a session's prompt within it by
// archiving its oldest turns as summaries in memory/history.jsonl, renders
// the part of the system prompt that comes from the archive (the session's
// "Recent history" and last archive summary), and reports the budget's
// figures for /status.
// The archive itself (its format, cursors and compaction) belongs to
// package history, whose Store it writes through.
//
// Token counts are cl100k_base, offline. The vocabulary costs about 1.2 MB
// of resident memory, so it is loaded only when a bound cannot decide:
// Before and After on a small chat never load it; Status (an exact figure)
// always may. The per-turn hard-limit check is Report.OverLimit.
//
// Dream reads the same archive through history.Store. The gateway calls the
// Consolidator once before each turn (Before: it may archive, and returns
// the rendered Prompt and a Report) and once after (After), passing the
// fixed prompt it built (identity and workspace files) and its tool
// definitions as values; nothing here calls back into the gateway. This
// package must not import gateway or dream; of dreamgate's packages it uses
// only history, workspace (through history), llm and the leaf audience:
// each archive entry is written in the memory scope of its conversation's
// audience (or the default scope when memory is shared), and a
// conversation's Recent history shows only entries of scopes it may read. Third-party types (the
// tokenizer) never appear in its exported API.
package consolidator
