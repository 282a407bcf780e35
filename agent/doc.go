// Package agent runs the tool-calling loop shared by chat turns and Dream
// phase 2, and provides the file tools (read_file, write_file, edit_file,
// list_dir) confined to the workspace.
//
// The loop guarantees a valid wire: every tool call the model makes is
// answered by exactly one tool result, in order, under a unique id, also when
// a tool fails, panics, the run is cancelled or a limit ends it. Callers may
// persist Result.Messages as they are.
//
// Every path a model names is hostile. All file tools go through Resolve:
// the workspace's confinement (workspace.Root.Resolve) refuses anything
// outside the workspace, any symbolic link, files with several hard links
// and the directories the workspace was told to forbid (the sessions), and
// the Policy refuses what this use of the tools may not touch (ChatPolicy
// for admins' turns, ChatGuestPolicy, which writes only the memory files,
// for everyone else's, DreamPolicy for Dream); files are reached only through the
// workspace's os.Root, so even a path that slipped past Resolve could not
// leave the workspace directory. Writes hold the workspace's write lock and
// go through its atomic write; the policies' file lists come from the
// workspace layout.
//
// agent imports llm (message types), workspace and the standard library
// only. It must not import gateway, dream, consolidator, gitstore or
// channels: those use it.
package agent
