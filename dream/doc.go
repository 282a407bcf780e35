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
//     the holder started); every writer of the memory repository among our
//     processes holds it, so a git index.lock found by whoever takes it was
//     left by a killed process and is removed at once, with a warning;
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
// Decisions where the design left room:
//
//   - prompts/dream.md, when it holds more than white space (capped at 32,000
//     characters), replaces the built-in guidance of both phases. The
//     program still appends, in both cases, a short "This step" section and
//     the rules it depends on: phase 1's answer format (the tags it parses)
//     and phase 2's tool rules (the tools enforce them anyway), then the
//     history and the files as data in the user message.
//   - An analysis with no tagged line at all (prose, an error text) is a
//     failure, not "nothing to do": taking it as [SKIP] would advance the
//     cursor past what the users said without anything having read it.
//   - A failed phase 2 leaves no half-edit: the three files are put back as
//     they were before phase 2 (a batch that did not complete is read
//     again, and its partial edits must not be committed later as someone's
//     manual change).
//   - Failures count against a batch (identified by its first cursor, which
//     does not move while it fails) only when the batch or the model's
//     handling of it may be at fault: a rejected or unreadable model
//     answer, a cut-off or unusable analysis, the editing step's iteration
//     or repeat limit, the run's deadline. An unreachable model, a cancelled
//     run (shutdown) and a repository or file error do not count: an outage
//     must not skip history. Counts live in memory/.dream_state (JSON, with
//     the last run's outcome for Status); after MaxFailures the batch is
//     skipped, recorded first as a "[DREAM-SKIPPED] …" history entry under
//     the session key "dream", then the cursor moves (also past the record
//     when it is the very next entry), with a warning in the log.
//   - A Dream commit's change count is taken from the real diff: per file
//     max(lines added, lines deleted), so a replaced line counts once.
//
// Phase 2's edits, the snapshot taken before them and the roll-back of a
// failed run hold the workspace's write lock (workspace.Root.Exclusive),
// as a restore does, so none of them interleaves with a chat edit.
//
// dream imports history (the archive, through its small History
// interface, which *history.Store satisfies), workspace, agent, gitstore
// and llm. It must not import consolidator nor gateway, channels or cmd.
package dream
