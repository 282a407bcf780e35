package audience

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// UnknownPlatform is the platform of Unknown's audiences: their scopes'
// names, shared-unknown-k…, say why they exist.
const UnknownPlatform = "unknown"

// Unknown is the audience of a conversation the platform said nothing
// about (an Inbound without a valid Audience, a conversation recorded
// before audiences were): the narrowest there is. It is a Shared audience
// of its own, named after the conversation's key, so it reads and is
// archived into one scope that no other conversation reads — never its
// team's, never the default scope. The same key always gives the same
// audience, so such a conversation keeps its memory across turns, and two
// keys never share one. Its name is a hash, not the key: a key may hold
// characters no scope name takes.
func Unknown(conversationKey string) Audience {
	sum := sha256.Sum256([]byte(conversationKey))
	// 12 bytes: 96 bits keep two conversations apart with room to spare.
	// In capitals, as platform ids are, so the name reads plainly.
	return Audience{Kind: Shared, Platform: UnknownPlatform, Chat: "K" + strings.ToUpper(hex.EncodeToString(sum[:12]))}
}

// IsUnknown reports whether a is one of Unknown's audiences.
func (a Audience) IsUnknown() bool {
	return a.Kind == Shared && a.Platform == UnknownPlatform
}
