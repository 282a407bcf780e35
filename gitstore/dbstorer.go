package gitstore

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage"
)

// dbStorer is go-git's storage (storage.Storer) over one DBTx: objects by
// id, refs with compare-and-swap, git's config, index and shallow list as
// records, a submodule's as records and refs under its own prefix. go-git
// calls it without a context: it is bound to one transaction, or to the
// database's reader. Objects never change, so those read or committed are
// kept (objectCache); those written within the transaction join them only
// once it commits (commitPending).
type dbStorer struct {
	tx      DBTx
	cache   *objectCache
	pending map[plumbing.Hash]cachedObject
	prefix  string // "" for the repository, "modules/<name>/" for a submodule
}

var _ storage.Storer = (*dbStorer)(nil)

// NewDBStorage is go-git's storage over tx, for go-git's own operations
// on a repository kept in a database (the contract's tests run them); the
// Store uses it itself. Objects it reads are kept for its life.
func NewDBStorage(tx DBTx) storage.Storer { return newDBStorer(tx, &objectCache{}) }

func newDBStorer(tx DBTx, cache *objectCache) *dbStorer {
	return &dbStorer{tx: tx, cache: cache, pending: map[plumbing.Hash]cachedObject{}}
}

// cachedObject is an object's type and content.
type cachedObject struct {
	kind plumbing.ObjectType
	data []byte
}

// objectCache keeps objects read from or committed to a database, by id,
// up to cacheMax bytes of content (then it starts over).
type objectCache struct {
	mu   sync.Mutex
	objs map[plumbing.Hash]cachedObject
	size int
}

const cacheMax = 64 << 20

func (c *objectCache) get(h plumbing.Hash) (cachedObject, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	o, ok := c.objs[h]
	return o, ok
}

func (c *objectCache) put(h plumbing.Hash, o cachedObject) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.size+len(o.data) > cacheMax {
		c.objs, c.size = nil, 0
	}
	if c.objs == nil {
		c.objs = map[plumbing.Hash]cachedObject{}
	}
	if _, ok := c.objs[h]; !ok {
		c.objs[h] = o
		c.size += len(o.data)
	}
}

// commitPending hands the objects the transaction wrote to the cache: it
// committed.
func (s *dbStorer) commitPending() {
	for h, o := range s.pending {
		s.cache.put(h, o)
	}
	s.pending = map[plumbing.Hash]cachedObject{}
}

func (s *dbStorer) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

func (s *dbStorer) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	switch obj.Type() {
	case plumbing.CommitObject, plumbing.TreeObject, plumbing.BlobObject, plumbing.TagObject:
	default:
		return plumbing.ZeroHash, fmt.Errorf("store object: %w", plumbing.ErrInvalidType)
	}
	r, err := obj.Reader()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return plumbing.ZeroHash, err
	}
	h := obj.Hash()
	if err := s.tx.PutObject(h.String(), obj.Type().String(), data); err != nil {
		return plumbing.ZeroHash, fmt.Errorf("store object %s: %w", shortID(h.String()), err)
	}
	s.pending[h] = cachedObject{kind: obj.Type(), data: data}
	return h, nil
}

// object finds an object: written within the transaction, kept, or read.
func (s *dbStorer) object(h plumbing.Hash) (cachedObject, bool, error) {
	if o, ok := s.pending[h]; ok {
		return o, true, nil
	}
	if o, ok := s.cache.get(h); ok {
		return o, true, nil
	}
	kind, data, ok, err := s.tx.Object(h.String())
	if err != nil || !ok {
		return cachedObject{}, false, err
	}
	t, err := plumbing.ParseObjectType(kind)
	if err != nil {
		return cachedObject{}, false, fmt.Errorf("object %s: %w", shortID(h.String()), err)
	}
	o := cachedObject{kind: t, data: data}
	s.cache.put(h, o)
	return o, true, nil
}

func (s *dbStorer) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	o, ok, err := s.object(h)
	if err != nil {
		return nil, err
	}
	if !ok || t != plumbing.AnyObject && o.kind != t {
		return nil, plumbing.ErrObjectNotFound
	}
	obj := &plumbing.MemoryObject{}
	obj.SetType(o.kind)
	if _, err := obj.Write(o.data); err != nil {
		return nil, err
	}
	return obj, nil
}

func (s *dbStorer) IterEncodedObjects(t plumbing.ObjectType) (storer.EncodedObjectIter, error) {
	kind := ""
	if t != plumbing.AnyObject {
		kind = t.String()
	}
	ids, err := s.tx.Objects("", kind)
	if err != nil {
		return nil, err
	}
	hashes := make([]plumbing.Hash, 0, len(ids))
	for _, id := range ids {
		if h, ok := parseHash(id); ok {
			hashes = append(hashes, h)
		}
	}
	return storer.NewEncodedObjectLookupIter(s, t, hashes), nil
}

func (s *dbStorer) HasEncodedObject(h plumbing.Hash) error {
	_, ok, err := s.object(h)
	switch {
	case err != nil:
		return err
	case !ok:
		return plumbing.ErrObjectNotFound
	}
	return nil
}

func (s *dbStorer) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	o, ok, err := s.object(h)
	switch {
	case err != nil:
		return 0, err
	case !ok:
		return 0, plumbing.ErrObjectNotFound
	}
	return int64(len(o.data)), nil
}

func (s *dbStorer) AddAlternate(string) error {
	return fmt.Errorf("a repository kept in a database has no alternates: %w", plumbing.ErrInvalidType)
}

// refValue is how a ref is kept: its id, or "ref: <target>".
func refValue(ref *plumbing.Reference) string {
	if ref.Type() == plumbing.SymbolicReference {
		return "ref: " + ref.Target().String()
	}
	return ref.Hash().String()
}

// parseRefValue reads a kept ref; a value that is neither is a
// *refDamage.
func parseRefValue(name plumbing.ReferenceName, v string) (*plumbing.Reference, error) {
	return parseRef(name, []byte(v))
}

func (s *dbStorer) SetReference(ref *plumbing.Reference) error {
	return s.CheckAndSetReference(ref, nil)
}

func (s *dbStorer) CheckAndSetReference(ref, old *plumbing.Reference) error {
	if err := checkRefName(ref.Name()); err != nil {
		return err
	}
	was := AnyValue
	if old != nil {
		was = refValue(old)
	}
	ok, err := s.tx.SetRef(s.prefix+ref.Name().String(), refValue(ref), was)
	if err != nil {
		return fmt.Errorf("set %s: %w", ref.Name(), err)
	}
	if !ok {
		return storage.ErrReferenceHasChanged
	}
	return nil
}

func (s *dbStorer) Reference(name plumbing.ReferenceName) (*plumbing.Reference, error) {
	v, ok, err := s.tx.Ref(s.prefix + name.String())
	switch {
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", name, err)
	case !ok:
		return nil, plumbing.ErrReferenceNotFound
	}
	return parseRefValue(name, v)
}

func (s *dbStorer) IterReferences() (storer.ReferenceIter, error) {
	all, _, err := s.tx.Refs(s.prefix+"", 0)
	if err != nil {
		return nil, err
	}
	var refs []*plumbing.Reference
	for name, v := range all {
		if v == "" || s.prefix == "" && strings.HasPrefix(name, "modules/") {
			continue
		}
		n := plumbing.ReferenceName(strings.TrimPrefix(name, s.prefix))
		if ref, err := parseRefValue(n, v); err == nil {
			refs = append(refs, ref)
		}
	}
	return storer.NewReferenceSliceIter(refs), nil
}

func (s *dbStorer) RemoveReference(name plumbing.ReferenceName) error {
	_, err := s.tx.SetRef(s.prefix+name.String(), "", AnyValue)
	return err
}

func (s *dbStorer) CountLooseRefs() (int, error) { return 0, nil }

func (s *dbStorer) PackRefs() error { return nil }

func (s *dbStorer) SetShallow(commits []plumbing.Hash) error {
	var b strings.Builder
	for _, h := range commits {
		b.WriteString(h.String() + "\n")
	}
	return s.tx.SetRecord(s.prefix+"shallow", []byte(b.String()))
}

func (s *dbStorer) Shallow() ([]plumbing.Hash, error) {
	data, err := s.tx.Record(s.prefix + "shallow")
	if err != nil {
		return nil, err
	}
	var out []plumbing.Hash
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		if h, ok := parseHash(strings.TrimSpace(sc.Text())); ok {
			out = append(out, h)
		}
	}
	return out, sc.Err()
}

func (s *dbStorer) SetIndex(idx *index.Index) error {
	var b bytes.Buffer
	if err := index.NewEncoder(&b).Encode(idx); err != nil {
		return err
	}
	return s.tx.SetRecord(s.prefix+"index", b.Bytes())
}

func (s *dbStorer) Index() (*index.Index, error) {
	data, err := s.tx.Record(s.prefix + "index")
	if err != nil {
		return nil, err
	}
	idx := &index.Index{Version: 2}
	if data == nil {
		return idx, nil
	}
	if err := index.NewDecoder(bytes.NewReader(data)).Decode(idx); err != nil {
		return nil, fmt.Errorf("read the index: %w", err)
	}
	return idx, nil
}

func (s *dbStorer) Config() (*config.Config, error) {
	data, err := s.tx.Record(s.prefix + "config")
	if err != nil {
		return nil, err
	}
	if data == nil {
		return config.NewConfig(), nil
	}
	return config.ReadConfig(bytes.NewReader(data))
}

func (s *dbStorer) SetConfig(c *config.Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	data, err := c.Marshal()
	if err != nil {
		return err
	}
	return s.tx.SetRecord(s.prefix+"config", data)
}

// Module is a submodule's storage: its refs and records under a prefix of
// their own, the objects shared (they are named by their content).
func (s *dbStorer) Module(name string) (storage.Storer, error) {
	m := *s
	m.prefix = s.prefix + "modules/" + name + "/"
	m.pending = s.pending
	return &m, nil
}
