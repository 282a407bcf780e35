package workspace

// Hot memory is what a prompt shows of a memory scope's files (SOUL.md,
// USER.md, memory/MEMORY.md): the chat prompt shows a scope's lines within
// a budget of tokens, and Dream compacts a scope that nears it. Both must
// use one number, so its default is computed here, below both.

// Bounds of the default hot-memory budget, in tokens.
const (
	// MaxDefaultHotTokens is the default budget on a large window: a
	// conversation reading two scopes (a DM: the team's and the person's)
	// then spends at most 24K tokens of each request on memory.
	MaxDefaultHotTokens = 12000
	// MinHotTokens is the least budget: fewer would show a handful of
	// facts and send every scope into a deep Dream.
	MinHotTokens = 1000
)

// DefaultHotTokens is the hot-memory budget of one scope for a chat model
// of window tokens, when the config sets none: an eighth of the window, at
// least MinHotTokens and at most MaxDefaultHotTokens (8K window: 1,000;
// 32K: 4,000; 128K: 12,000).
func DefaultHotTokens(window int) int {
	return max(MinHotTokens, min(MaxDefaultHotTokens, window/8))
}
