package dream

import "github.com/dreamgate/dreamgate/gitstore"

// hookRepo reports each commit to hook at PointCommit (Deps.Hook); a nil
// hook leaves repo as it is.
func hookRepo(repo Repo, hook func(string)) Repo {
	if hook == nil || repo == nil {
		return repo
	}
	return hookedRepo{Repo: repo, hook: hook}
}

type hookedRepo struct {
	Repo
	hook func(string)
}

func (h hookedRepo) Commit(subject, body string) (gitstore.Commit, error) {
	c, err := h.Repo.Commit(subject, body)
	if err == nil {
		h.hook(PointCommit)
	}
	return c, err
}
