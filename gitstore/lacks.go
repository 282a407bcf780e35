package gitstore

import (
	"fmt"
	"slices"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// DBLacks lists, sorted, the refs of the git repository at dir (a
// workspace's) whose commits db does not hold: the history a process on
// the database would leave behind in the workspace. A copy (CopyToDB)
// brings a commit in with all its history, so a ref whose commit db holds
// is there whole. It only reads dir, as git keeps it.
func DBLacks(db DB, dir string) ([]string, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{EnableDotGitCommonDir: true})
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrNotARepository, err)
	}
	refs, err := repo.References()
	if err != nil {
		return nil, fmt.Errorf("list the workspace's refs: %w", err)
	}
	defer refs.Close()
	rd := db.Reader()
	var out []string
	err = refs.ForEach(func(ref *plumbing.Reference) error {
		if ref.Type() != plumbing.HashReference {
			return nil
		}
		_, _, ok, err := rd.Object(ref.Hash().String())
		if err == nil && !ok {
			out = append(out, ref.Name().String())
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("look for the workspace's commits in the database: %w", err)
	}
	slices.Sort(out)
	return out, nil
}
