// Package dreamtext is the wording of the Dream commands: the replies to
// /dream, /dream-log, /dream-restore and the Dream line of /status in a chat,
// and the output of `dreamgate dream run|log|restore` and `dreamgate status`
// at the command line. The engine (package dream) returns structured
// results — a Report, a Status, a RestoreResult, errors matching its
// sentinels — and never words; this package turns them into sentences for
// people.
//
// Each text is plain text with Markdown code spans and fences, which every
// channel renders or shows legibly. None carries an error's text: errors are
// mapped to sentences here and logged by the caller. Where a text names a
// command, it names it as the reader types it (Commands): `/dream-log <sha>`
// in a chat, `dreamgate dream log <sha>` in a shell.
//
// dreamtext imports dream, gitstore and internal leaves; the gateway's
// command handlers and cmd/dreamgate import it. It must not import gateway.
package dreamtext
