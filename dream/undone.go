package dream

import (
	"strings"

	"github.com/dreamgate/dreamgate/gitstore"
)

// undoneSearch bounds how many of the latest commits UndoneBy reads.
const undoneSearch = 100

// UndoneBy finds the restore commit that has undone c, the latest Dream
// commit, if one has. A restore puts the files back to before a Dream
// commit no later than the latest one, so any restore newer than c undid
// it. Only the latest undoneSearch commits are read: a c older than those
// is taken as undone when a restore is among them.
func UndoneBy(log interface {
	Log(n int, subjectPrefix string) ([]gitstore.Commit, error)
}, c gitstore.Commit) (gitstore.Commit, bool, error) {
	cs, err := log.Log(undoneSearch, "")
	if err != nil {
		return gitstore.Commit{}, false, err
	}
	for _, x := range cs {
		if x.SHA == c.SHA {
			return gitstore.Commit{}, false, nil
		}
		if strings.HasPrefix(x.Subject, gitstore.RevertPrefix) {
			return x, true, nil
		}
	}
	return gitstore.Commit{}, false, nil
}
