package dream

import (
	"fmt"
	"testing"

	"github.com/dreamgate/dreamgate/gitstore"
)

// fakeLog lists commits newest first, as gitstore.Store.Log does.
type fakeLog []gitstore.Commit

func (l fakeLog) Log(n int, prefix string) ([]gitstore.Commit, error) {
	if prefix != "" {
		return nil, fmt.Errorf("unexpected prefix %q", prefix)
	}
	return l[:min(n, len(l))], nil
}

func TestUndoneBy(t *testing.T) {
	dreamC := gitstore.Commit{SHA: "d1", Subject: SubjectPrefix + "2 findings"}
	revert := gitstore.Commit{SHA: "r1", Subject: gitstore.RevertPrefix + "d0"}
	manual := gitstore.Commit{SHA: "m1", Subject: gitstore.ManualSubject}
	many := make(fakeLog, undoneSearch+5)
	for i := range many {
		many[i] = manual
	}
	many[3] = revert
	for _, tc := range []struct {
		name string
		log  fakeLog
		want bool
	}{
		{"restore after it", fakeLog{manual, revert, manual, dreamC, revert}, true},
		{"restore only before it", fakeLog{manual, dreamC, revert}, false},
		{"no restore", fakeLog{dreamC, manual}, false},
		{"it is older than the search, a restore within", many, true},
	} {
		r, ok, err := UndoneBy(tc.log, dreamC)
		if err != nil || ok != tc.want || ok && r.SHA != "r1" {
			t.Errorf("%s: %+v %v %v, want %v", tc.name, r, ok, err, tc.want)
		}
	}
}
