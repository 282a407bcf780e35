// Package memory owns a scope's memory: which scopes exist and how they
// are named and labelled, which scopes an audience reads and writes (the
// shared-memory setting, decided here once), how a scope's files are read
// (never through a symbolic link), its tiers — the hot files a prompt
// shows within a budget (SOUL.md, USER.md, memory/MEMORY.md) and cold
// memory (memory/COLD.md), which recall searches — what hot memory costs
// in a prompt (one count, Cost, for the prompt, the memory page and the
// deep Dream), and the line format (its leaf, memory/memline).
//
// The prompt, Dream, the deep Dream, the memory page and recall ask it;
// none of them reads a scope's files itself. Files is the one way in: Disk
// reads a workspace folder; Committed reads a scope's files from its
// newest commit in the memory repository (the PostgreSQL engine's, which
// no file system holds), keeping what it read by commit id.
//
// It sits above workspace and audience and below gateway, dream, recall
// and web; it imports workspace (the layout's names), audience (scopes)
// and the workspace template (a file still as the template made it is not
// memory yet).
package memory
