package dream

import (
	"regexp"
	"strings"
)

// idWord is a line's id in its comment; an empty comment is what is left
// of a comment that held the id alone.
var (
	idWord       = regexp.MustCompile(` id:[0-9a-z]+`)
	emptyComment = regexp.MustCompile(` <!--\s*-->`)
)

// noIDs is text without the ids Dream gives every line: for tests about
// something else, which compare lines as they were before ids.
func noIDs(text string) string {
	text = idWord.ReplaceAllString(text, "")
	return strings.TrimRight(emptyComment.ReplaceAllString(text, ""), "")
}
