// Package dream runs the Dream: the scheduled second stage of memory, which
// reads the history archive (memory/history.jsonl) written by the
// Consolidator and makes small, surgical edits to the memory files SOUL.md,
// USER.md and memory/MEMORY.md of each memory scope, each batch recorded as
// one git commit.
//
// How a run walks the scopes. Every history entry belongs to a memory
// scope (history.Entry.Scope; none: the default scope, the workspace
// root's files); a scope's files are the same three names in its folder,
// scopes/<name>/. A run (Run, with the Scopes it is about: every one for
// cron and the CLI, an audience's readable ones for /dream) asks the
// history which scopes have entries after their own cursor (Backlogs: no
// content is read) and visits them, the scope with the oldest unread entry
// first, one batch each in turn, round-robin, while unread entries remain,
// within the run's bounds (Config.MaxBatchesPerRun, MaxTokensPerRun), so a
// scope with a huge backlog cannot starve the others. A scope's batch is
// its own entries after its cursor (SinceIn); phase 1 reads that scope's
// files; phase 2's file tools are rooted at a copy of that scope's files
// (stage.go), so no other scope's file, the root's least, is within reach;
// the scope's hand edits are committed before its Dream, and its Dream
// commit holds its paths alone (its trailers say "Scope: <name>", except
// in the default scope, whose commits read as they always did). A scope's
// first files are committed as the template makes them, "scope created:
// <name>", before anything a chat wrote there (a hand edit, committed
// after). Failures, findings left and skips are the scope's: a failing
// batch holds back only its own scope (only a cancelled run or an
// unreachable model stops the others). After the batches, every scope with
// nothing unread moves its cursor to the end of the history, so the
// frontier (memory/.dream_cursor, the least cursor) and with it compaction
// never wait for a quiet scope; before any write moves the frontier up,
// every scope with entries past it is recorded at it, so the frontier
// never passes an entry some scope has not read, whatever order the
// scopes appear in. Report and
// Status carry each scope's part (ScopeReport, ScopeStatus) and their
// sums; Restore undoes a Dream commit's files of the chosen scopes only,
// and a commit of none of them is, to its caller, unknown. The zero Scopes
// chooses none, so an audience that may read nothing is given nothing.
// While Dream is off, a Retention pass moves every scope's cursor past the
// entries it retires. A workspace of one scope (the default) behaves as
// before scopes.
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
//   - the cursor rules: a scope's cursor advances only when phase 2
//     completes; a failed batch is retried, and skipped (with a record in the
//     history and a warning in the log) after Config.MaxFailures failed runs;
//   - its progress, in one record that one type writes (Ledger,
//     memory/.dream_ledger): per memory scope the cursor, the failures, the
//     findings left, the skips, the last run, the deep Dream's count and
//     request, and the commit whose step it took in last;
//     memory/.dream_cursor, which nanobot reads, is kept as the frontier
//     of every scope, and wins when the two differ. Every writer takes the
//     record's short lock; a Dream, a restore and the retention hold the
//     Dream lock and go through one recovery path (open);
//   - whole steps (step.go): a batch, a deep pass, a restore, a scope's
//     first files and hand edits saved each land as one commit, made
//     before their files are written and saying in its trailers what the
//     ledger learns, so that whatever the kill point the step happened
//     entirely or not at all, and the next start finishes it from the
//     commit;
//   - draining a backlog: after a completed batch a run goes on with the
//     next while unread entries remain, up to Config.MaxBatchesPerRun
//     batches and Config.MaxTokensPerRun tokens, and reports what is left;
//     while Dream is off, a Retention keeps the history bounded;
//   - commits: hand edits first as "manual: edits outside Dream", then
//     Dream's own edits with the real diff as the body and the step's
//     trailers; restore of a Dream commit;
//   - compaction of the history after every attempt, never dropping an
//     entry Dream has not read;
//   - the cron scheduler glue (robfig/cron; its types stay in this package).
//
// It returns structured results (Report, Status, RestoreResult, errors
// matching its sentinels) and no wording: gateway/dreamtext words them for
// the chat commands and the CLI.
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
//   - Phase 2 applies the findings in chunks of 10, each an agent run with
//     a budget of its findings plus 5 calls (Config.MaxIterations is the
//     floor), so a model that makes one edit per call finishes; a chunk
//     that runs out of calls is retried in halves, so only a single finding
//     that exhausts a whole budget is the model's failure. A chunk is
//     complete only when the model answers without a tool call and the
//     answer was not cut at the length limit.
//   - Phase 2 edits a copy of the scope's files, never the files
//     themselves. A stopped chunk's edits are put back in the copy. When
//     earlier chunks of the batch completed, their edits are sound and
//     land ("dream: … (partial: N of M findings left)") with the findings
//     left in the same commit's trailers, and the next run applies them
//     without a new analysis; the cursor moves only when every finding is
//     applied or dropped by the model. A run that made such progress does
//     not count as a failure of its batch, so a skip never comes from
//     Dream's own limits. A skip records the findings never applied in its
//     history entry, and Status (and so /status and /dream-log) names the
//     entries skipped.
//   - A finding's edit and its applied mark land in the same commit, so no
//     finding is applied twice however a run is cut: a kill before the
//     commit leaves the files, the repository and the ledger as they were
//     (the batch is read again); a kill after it is finished by the next
//     run, a restore or a start (Recover), which writes the files of the
//     commits after the ledger's head where they still hold the parent's
//     version (a hand edit made in between is kept, and committed as one)
//     and has the ledger take in their trailers. A chat that edits the
//     scope's files while phase 2 works is not overwritten: its edit is
//     committed first, as a hand edit, and the batch's change applied to
//     it line by line. Deps.Hook lets a test kill the process right after
//     an edit of the copy (PointEdit), a commit (PointCommit) or a ledger
//     write (PointLedger); the memory repository reports the branch's move
//     and each file a step writes.
//   - Report.Reason tells the operator what to check; PublicReason is the
//     same without the operator's detail, for chat users other than the
//     operator.
//   - Failures count against a batch (identified by its first cursor, which
//     does not move while it fails) only when the batch or the model's
//     handling of it may be at fault: a rejected or unreadable model
//     answer, a cut-off or unusable analysis, the editing step's iteration
//     or repeat limit, the run's deadline. An unreachable model, a cancelled
//     run (shutdown) and a repository or file error do not count: an outage
//     must not skip history. Counts live in the ledger (with the last run's
//     outcome for Status); after MaxFailures the batch is
//     skipped, recorded first as a "[DREAM-SKIPPED] …" history entry under
//     the session key "dream", then the cursor moves (also past the record
//     when it is the very next entry), with a warning in the log.
//   - A Dream commit's change count is taken from the real diff: per file
//     max(lines added, lines deleted), so a replaced line counts once.
//   - Every memory line carries its priority (permanent, durable,
//     ephemeral), the date it was last confirmed and its source history
//     cursors in a trailing comment (memory/memline). Dream keeps them
//     itself after phase 2 (upkeep.go), comparing the scope's files before
//     and after the edits, never trusting the model with bookkeeping: a
//     new or changed line is dated today and traced to the entries holding
//     its words (else its finding's, else the batch's); its priority is the
//     one the model wrote in its comment, else the one phase 1 gave its
//     finding ("[USER] [ephemeral] …"), else the replaced line's, else
//     durable; an unchanged line a finding restates is confirmed; a line
//     without metadata (a person's) is given none. Lines get a stable id
//     when Dream stamps them. A correction names the id of the line it
//     replaces, hot or cold, and that line is marked superseded by it where
//     it stands, a hot one moved to cold memory (supersede.go): never
//     because two lines share words. Ephemeral lines older than
//     Config.EphemeralDays then retire to the scope's cold memory
//     (memory/COLD.md), in the same commit; every cold line says when and
//     why it left (cold.go). A line is traced to its finding and entries
//     by the words they share (match.go).
//   - A deep Dream (deep.go) keeps each scope's memory within its budget
//     over months: after Config.DeepEvery Dreams of the scope, when its
//     files pass Config.DeepAtShare of Config.HotTokens (counted with the
//     prompt's tokenizer, lines as written), and when the prompt builder
//     asked (Ledger.RequestDeep, in the ledger under its short lock, so
//     that asking never waits for a running Dream and a restart does not
//     forget). The
//     model merges duplicates and corrected lines and moves out what is no
//     longer true by numbered operations the program applies — so no line
//     leaves hot memory except to cold memory, and a permanent one never
//     does; a second, firmer pass when the first leaves the scope over its
//     target; then the program moves the lowest-priority, oldest lines of
//     USER.md and MEMORY.md out until it is under. One "dream: deep —"
//     step holds the files and cold memory: a kill between the two never
//     leaves a line in both tiers or in neither.
//
// A step's compare, commit and writing of its files hold the workspace's
// write lock (workspace.Root.Exclusive), as a restore does, so none of
// them interleaves with a chat edit.
//
// dream imports history (the archive, through its small History
// interface, which *history.Store satisfies), workspace, agent, gitstore
// and llm. It must not import consolidator nor gateway, channels or cmd.
package dream
