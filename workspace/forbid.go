package workspace

import (
	"io/fs"
	"os"
)

// Forbid keeps dir (an ordinary path) out of reach of every path Resolve
// accepts, wherever it is: when dir lies inside the workspace, a path
// through it, by any spelling or through another name of the directory, is
// refused with ErrNotAllowed. The gateway forbids its sessions directory,
// so the file tools can never read other people's conversations, whatever
// the config says. The directory is compared by identity each time, so one
// created after Forbid is covered too.
func (r *Root) Forbid(dir string) {
	r.shared.fmu.Lock()
	defer r.shared.fmu.Unlock()
	r.shared.forbidden = append(r.shared.forbidden, dir)
}

// Forbidden reports whether fi is one of the directories given to Forbid.
// list_dir uses it to leave such a directory out of a listing.
func (r *Root) Forbidden(fi fs.FileInfo) bool {
	return fi != nil && fi.IsDir() && r.isForbidden(fi)
}

func (r *Root) isForbidden(fi fs.FileInfo) bool {
	r.shared.fmu.Lock()
	dirs := r.shared.forbidden
	r.shared.fmu.Unlock()
	for _, d := range dirs {
		if st, err := os.Stat(d); err == nil && os.SameFile(st, fi) {
			return true
		}
	}
	return false
}
