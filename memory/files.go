package memory

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/workspace"
)

// The files of a scope: its hot tier (what a prompt shows, within its
// budget) and its cold tier (what left hot memory, kept for recall), each
// named relative to the scope's folder as the workspace layout names them.
const (
	Soul = workspace.Soul   // the assistant's voice and rules
	User = workspace.User   // the people
	Long = workspace.Memory // memory/MEMORY.md: durable facts and context
	Cold = workspace.Cold   // memory/COLD.md: cold memory
)

// HotFiles are a scope's hot files, in the order a prompt shows them.
func HotFiles() []string { return []string{Soul, User, Long} }

// TierFiles are every file of a scope's memory: the hot files, then cold
// memory.
func TierFiles() []string { return append(HotFiles(), Cold) }

// IsTierFile reports whether rel names one of a scope's memory files.
func IsTierFile(rel string) bool { return slices.Contains(TierFiles(), rel) }

// ErrLink: a scope's memory file, or a folder on its way, is a symbolic
// link. Memory is never read through one: a link committed to the memory
// repository (and brought back by a restore) could point at any file the
// process may read.
var ErrLink = errors.New("a memory file is a symbolic link, which is never followed")

// ErrNotRegular: a scope's memory file is there but is no regular file (a
// folder, a pipe, a device).
var ErrNotRegular = errors.New("a memory file is not a regular file")

// ErrNotMemory: the name asked for is not one of a scope's memory files.
var ErrNotMemory = errors.New("not a memory file")

// Files reads the memory files of scopes. Disk reads a workspace folder;
// an engine that keeps the memory repository elsewhere would read a
// commit's tree instead. rel is one of TierFiles.
type Files interface {
	// ReadFile returns scope s's file rel. A missing file is
	// fs.ErrNotExist; a symbolic link on the way is ErrLink, a file that
	// is there but no regular file ErrNotRegular.
	ReadFile(s audience.Scope, rel string) ([]byte, error)
	// Version is a cheap look at the file that changes when the file
	// does (zero when it is missing), so that readers read again only
	// then. A symbolic link on the way is ErrLink.
	Version(s audience.Scope, rel string) (Version, error)
	// Folders lists the scopes that have a folder of their own (never the
	// default scope), sorted.
	Folders() ([]audience.Scope, error)
}

// Disk is Files over a workspace folder.
type Disk struct{ dir string }

// NewDisk reads the workspace in dir.
func NewDisk(dir string) *Disk { return &Disk{dir: dir} }

var _ Files = (*Disk)(nil)

// where is the workspace-relative path of s's file rel, checked.
func where(s audience.Scope, rel string) (string, error) {
	if !IsTierFile(rel) {
		return "", fmt.Errorf("%q: %w", rel, ErrNotMemory)
	}
	if _, err := audience.ParseScope(string(s)); err != nil {
		return "", err
	}
	return path.Join(s.Dir(), rel), nil
}

// lstatAll describes each element of the workspace-relative path p in
// root, refusing a symbolic link anywhere; it returns the last one's.
func lstatAll(root *os.Root, p string) (fs.FileInfo, error) {
	var fi fs.FileInfo
	parts := strings.Split(p, "/")
	for i := range parts {
		var err error
		fi, err = root.Lstat(strings.Join(parts[:i+1], "/"))
		if err != nil {
			return nil, err
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return nil, fmt.Errorf("%s: %w", p, ErrLink)
		}
	}
	return fi, nil
}

func (d *Disk) ReadFile(s audience.Scope, rel string) ([]byte, error) {
	p, err := where(s, rel)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return nil, fmt.Errorf("open the workspace: %w", err)
	}
	defer root.Close()
	fi, err := lstatAll(root, p)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", p, ErrNotRegular)
	}
	f, err := root.OpenFile(p, os.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	// A folder swapped for a link after lstatAll looked leads elsewhere:
	// the file opened is then not the one described.
	got, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !os.SameFile(fi, got) {
		return nil, fmt.Errorf("%s: %w", p, ErrLink)
	}
	return io.ReadAll(f)
}

func (d *Disk) Version(s audience.Scope, rel string) (Version, error) {
	p, err := where(s, rel)
	if err != nil {
		return Version{}, err
	}
	root, err := os.OpenRoot(d.dir)
	if err != nil {
		return Version{}, fmt.Errorf("open the workspace: %w", err)
	}
	defer root.Close()
	fi, err := lstatAll(root, p)
	if errors.Is(err, fs.ErrNotExist) {
		return Version{}, nil
	}
	if err != nil {
		return Version{}, err
	}
	return Version{Size: fi.Size(), Mod: fi.ModTime(), exists: true}, nil
}

// Version is what Files.Version sees of a file: its size and when it was
// last written.
type Version struct {
	Size   int64
	Mod    time.Time
	exists bool
}

// Missing reports a file that does not exist.
func (v Version) Missing() bool { return !v.exists }

// String is the version as a stamp to compare ("" when missing).
func (v Version) String() string {
	if !v.exists {
		return ""
	}
	return strconv.FormatInt(v.Size, 10) + ":" + strconv.FormatInt(v.Mod.UnixNano(), 10)
}

func (d *Disk) Folders() ([]audience.Scope, error) {
	entries, err := os.ReadDir(filepath.Join(d.dir, audience.ScopesDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list the memory scopes: %w", err)
	}
	var out []audience.Scope
	for _, e := range entries {
		// A link is no folder: DirEntry.IsDir does not follow it.
		if s, err := audience.ParseScope(e.Name()); err == nil && s != audience.Default && e.IsDir() {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out, nil
}

// Read returns scope s's memory file rel (one of TierFiles), never
// through a symbolic link: a missing file is fs.ErrNotExist.
func (m *Memory) Read(s audience.Scope, rel string) ([]byte, error) {
	return m.Files().ReadFile(s, rel)
}

// noFiles is the Files of a Memory made without any: there is no file.
type noFiles struct{}

func (noFiles) ReadFile(audience.Scope, string) ([]byte, error) { return nil, fs.ErrNotExist }
func (noFiles) Version(audience.Scope, string) (Version, error) { return Version{}, nil }
func (noFiles) Folders() ([]audience.Scope, error)              { return nil, nil }
