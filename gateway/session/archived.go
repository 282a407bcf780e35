package session

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/dreamgate/dreamgate/audience"
	"github.com/dreamgate/dreamgate/llm"
)

// Reading archived messages for a search index. What a conversation has
// archived never changes: its file is only appended to, and /new renames
// it aside under a name of its own. So a reader that noted how far it read
// need only read on from there, and it needs no lock: the gateway holding
// the conversation must never be refused it because an index was being
// built.

// ArchiveFile is a message file of the sessions directory, as ArchiveFiles
// lists it.
type ArchiveFile struct {
	// Name is the file's name without ".jsonl": a key's current
	// conversation's, or one set aside by /new ("<base>.<id>"), which is
	// never reused.
	Name string
	Key  string
	// Stamp changes when the message file or its metadata changes (their
	// sizes and modification times): a file listed with the stamp a
	// reader already read it under has nothing new for it.
	Stamp string
}

// ArchiveFiles lists the message files of every conversation, current or
// set aside. It reads the directory and stats the files; it opens none.
func (st *Store) ArchiveFiles() ([]ArchiveFile, error) {
	if st.conv != nil {
		return st.archiveFilesDB()
	}
	files, err := st.messageFiles()
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	out := make([]ArchiveFile, 0, len(files))
	for _, f := range files {
		stamp := stampOf(filepath.Join(st.dir, f.name+".jsonl")) + "/" + stampOf(filepath.Join(st.dir, f.name+".meta.json"))
		out = append(out, ArchiveFile{Name: f.name, Key: f.key, Stamp: stamp})
	}
	return out, nil
}

func stampOf(path string) string {
	fi, err := os.Stat(path)
	if err != nil {
		return "-"
	}
	return strconv.FormatInt(fi.Size(), 10) + ":" + strconv.FormatInt(fi.ModTime().UnixNano(), 10)
}

// Archived is what ReadArchived found of a conversation.
type Archived struct {
	Key string
	// ID is the conversation's generation (new at /new): a position noted
	// in one generation means nothing in another.
	ID string
	// Audience is who could read it, as Session.Audience decides: the one
	// its metadata records, else the newest one a message read names,
	// else audience.Unknown of its key, the narrowest there is.
	Audience audience.Audience
	// Next is the index of the first message not read (the file's
	// last_consolidated, or fewer when the file holds fewer), and NextAt
	// the byte offset of its line: where the next read starts.
	Next   int
	NextAt int64
}

// ErrChanged is returned by ReadArchived when the file was replaced while
// it read (a /new set the conversation aside): nothing it reported is to
// be kept; the next read sees the new files.
var ErrChanged = errors.New("the conversation's files changed while they were read")

// ReadArchived reads the archived messages of the conversation in the
// message file name (an ArchiveFiles Name), without taking any lock: those
// before its last_consolidated. It first reads the metadata and asks
// resume where to start in that generation: the index of the first message
// not yet read and the byte offset of its line, as an earlier read
// returned them (0, 0 for the start). fn is called with each message from
// there on, with its index; an error from fn ends the read and is
// returned. A position that is no longer a line's start (a file changed by
// hand) is read from the start again; fn is then called for the messages
// before it too, and the caller skips those it has.
func (st *Store) ReadArchived(name string, resume func(id string) (from int, at int64), fn func(i int, m llm.Message) error) (Archived, error) {
	if st.conv != nil {
		return st.readArchivedDB(name, resume, fn)
	}
	prefix := filepath.Join(st.dir, name)
	f, err := os.Open(prefix + ".jsonl")
	if err != nil {
		return Archived{}, fmt.Errorf("open conversation %s: %w", name, err)
	}
	defer f.Close()
	rawMeta, err := os.ReadFile(prefix + ".meta.json")
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return Archived{}, fmt.Errorf("read conversation %s metadata: %w", name, err)
	}
	s := &Session{prefix: prefix, logger: slog.New(slog.DiscardHandler)}
	if rawMeta != nil && json.Unmarshal(rawMeta, &s.meta) != nil {
		s.meta = meta{} // unreadable: nothing counts as archived, as a load decides
	}
	key, asideID, ok := parseFileName(name)
	if !ok {
		return Archived{}, fmt.Errorf("read conversation: %q is not a message file's name", name)
	}
	if s.meta.ID == "" {
		s.meta.ID = asideID
	}
	out := Archived{ID: s.meta.ID}
	from, at := resume(out.ID)
	lc := s.meta.LastConsolidated
	if from < 0 || at < 0 || from > lc {
		from, at = 0, 0
	}
	if at > 0 && !startsLine(f, at) {
		from, at = 0, 0
	}
	if _, err := f.Seek(at, io.SeekStart); err != nil {
		return Archived{}, fmt.Errorf("read conversation %s: %w", name, err)
	}
	out.Next, out.NextAt = from, at
	if from < lc {
		if err := s.scanArchived(f, at, from, lc, fn, &out); err != nil {
			return Archived{}, err
		}
	}
	// The metadata read is the one that goes with the file read only if
	// neither moved meanwhile: /new renames the file, then the metadata.
	now, err := os.ReadFile(prefix + ".meta.json")
	if err != nil && !errors.Is(err, fs.ErrNotExist) || !bytes.Equal(now, rawMeta) || !sameFile(f, prefix+".jsonl") {
		return Archived{}, ErrChanged
	}
	s.meta.Key, out.Key = key, key
	s.audienceFromOrigins()
	out.Audience = s.meta.Audience
	if out.Audience.IsZero() {
		out.Audience = audience.Unknown(out.Key)
	}
	return out, nil
}

// scanArchived calls fn with each archived message from the from-th (its
// line starting at byte at) up to the last archived one, lc, and sets where
// the next read starts: after them, or over from the start when the file
// holds fewer messages than its metadata says.
func (s *Session) scanArchived(f io.Reader, at int64, from, lc int, fn func(i int, m llm.Message) error, out *Archived) error {
	var fnErr error
	cr := &countingReader{r: f}
	nextAt := int64(-1) // where message lc's line starts, once seen
	_, err := s.scan(bufio.NewReaderSize(cr, 64<<10), at, from, -1, nil, func(i int, m llm.Message, ref lineRef) {
		switch {
		case i == lc:
			nextAt = ref.off
		case i < lc && fnErr == nil:
			if fnErr = fn(i, m); fnErr == nil {
				out.Next = i + 1
			}
		}
	})
	if err != nil {
		return err
	}
	if fnErr != nil {
		return fnErr
	}
	if nextAt < 0 {
		nextAt = at + cr.n // the file ended with the archived part
	}
	if out.Next == lc {
		out.NextAt = nextAt
	} else {
		// The file holds fewer messages than its metadata says (a
		// last_consolidated a load would reset): the next read starts
		// over, skipping what it has.
		out.Next, out.NextAt = 0, 0
	}
	return nil
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// startsLine reports whether byte at of f starts a line.
func startsLine(f *os.File, at int64) bool {
	var b [1]byte
	_, err := f.ReadAt(b[:], at-1)
	return err == nil && b[0] == '\n'
}

func sameFile(f *os.File, path string) bool {
	a, err := f.Stat()
	if err != nil {
		return false
	}
	b, err := os.Stat(path)
	return err == nil && os.SameFile(a, b)
}
