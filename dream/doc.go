// Package dream runs the Dream: the scheduled second stage of memory, which
// reads the history archive (memory/history.jsonl) written by the
// Consolidator and makes small, surgical edits to the memory files SOUL.md,
// USER.md and memory/MEMORY.md, each run recorded as one git commit.
//
// It is responsible for:
//   - the two phases: a plain analysis call that turns a batch of history
//     entries into tagged findings, then an editing agent (agent.Loop with
//     read_file and edit_file confined to the three files) that applies them;
//   - single-flight: one Dream at a time across cron, /dream and the CLI, also
//     across processes (a file lock on memory/.dream.lock that records when
//     the holder started);
//   - the cursor rules: memory/.dream_cursor advances only when phase 2
//     completes; a failed batch is retried, and skipped (with a record in the
//     history and a warning in the log) after Config.MaxFailures failed runs;
//   - commits: hand edits first as "manual: edits outside Dream", then
//     Dream's own edits with the real diff as the body; restore of a Dream
//     commit;
//   - compaction of the history after every attempt, never dropping an
//     entry Dream has not read;
//   - the cron scheduler glue (robfig/cron; its types stay in this package);
//   - the text of the Dream commands shared by chat (/dream, /dream-log,
//     /dream-restore) and the CLI (dreamgate dream ...).
//
// dream imports agent, gitstore and llm. It must not import consolidator
// (the history store reaches it through the History interface, adapted in
// cmd) nor gateway, channels or cmd.
package dream
