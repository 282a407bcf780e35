// Package workspace owns the layout of a dreamgate workspace and the one way
// its files are written.
//
//   - Layout: which files are the memory files Dream edits and the prompt
//     shows (SOUL.md, USER.md, memory/MEMORY.md), and which are private to
//     the program (the history archive, the cursor and state files, lock
//     files, the memory repository), and which the memory repository
//     versions (TrackedFiles: the memory files and the instructions,
//     AGENTS.md and prompts/dream.md; TrackedPatterns: every scope folder's
//     memory files and the cold memory, wherever they appear). Every other
//     package asks here instead of keeping its own list.
//   - Root: the workspace directory opened as an os.Root, the confinement
//     check for a path a model chose (Resolve: no escape, no symbolic link,
//     no file with several hard links, no directory the caller forbade such
//     as the sessions directory), and the workspace's write
//     lock (Exclusive), shared by the chat tools, Dream's phase 2, Dream's
//     snapshot and roll-back, and a restore from the memory repository.
//   - WriteFile / Root.WriteFile: the atomic write (a uniquely named temp
//     file beside the target, fsync, rename, fsync of the directory).
//   - Scope: a memory scope's folder (scopes/<name>, the same file names
//     inside) opened as a Root of its own, sharing the workspace's write
//     lock, and created on first use from the template's memory files.
//
// Of dreamgate's packages it imports only the leaves audience (scope
// names) and workspace-template (a new scope's files).
package workspace
