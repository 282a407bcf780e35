package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dreamgate/dreamgate/internal/editdist"
)

// Reading config.json strictly. encoding/json matches a key to a field
// whatever its case and names an unknown key by its leaf only, so the file
// is first walked along the Go type it decodes into: every key must be a
// field's exact name, and a wrong one is named by its whole path with the
// nearest right one. The walk reads the struct tags, so a key added to
// Config is known here without a list to keep in step.

// decodeConfig reads data over cfg, which holds the defaults. Errors are
// *configError without the file, which the caller adds.
func decodeConfig(data []byte, cfg *Config) error {
	if err := checkKeys(data, reflect.TypeOf(cfg).Elem()); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(cfg)
	var typ *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &typ) && typ.Field != "":
		return &configError{field: typ.Field, msg: fmt.Sprintf("must be %s, not %s", jsonKind(typ.Type), jsonValue(typ.Value))}
	default:
		// checkKeys has read the text and its keys already: what is left
		// is a value a field's own decoder refused (shardCount).
		return jsonError(data, err)
	}
}

// checkKeys walks data, which must be one JSON object, along t.
func checkKeys(data []byte, t reflect.Type) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) {
		return &configError{msg: "the file is empty; it must hold one JSON object (`{}` for all defaults)"}
	}
	if err != nil {
		return jsonError(data, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return &configError{msg: "the file must hold one JSON object (`{}` for all defaults), not " + describeToken(tok)}
	}
	w := &keyWalker{dec: dec, data: data, root: t}
	if err := w.object(t, ""); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &configError{msg: "unexpected data after the JSON object"}
	}
	return nil
}

type keyWalker struct {
	dec  *json.Decoder
	data []byte
	root reflect.Type
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// value reads the value at path, which decodes into t.
func (w *keyWalker) value(t reflect.Type, path string) error {
	for {
		if reflect.PointerTo(t).Implements(unmarshalerType) || t.Implements(unmarshalerType) {
			// A type that reads its own JSON (shardCount) has no keys.
			var raw json.RawMessage
			return w.read(w.dec.Decode(&raw))
		}
		if t.Kind() != reflect.Pointer {
			break
		}
		t = t.Elem()
	}
	tok, err := w.dec.Token()
	if err != nil {
		return w.read(err)
	}
	d, ok := tok.(json.Delim)
	switch {
	case !ok:
		return nil // a scalar: the decoder checks its type
	case d == '{' && t.Kind() == reflect.Struct:
		return w.object(t, path)
	case d == '{' && t.Kind() == reflect.Map:
		return w.entries(t.Elem(), path)
	case d == '[' && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array):
		return w.list(t.Elem(), path)
	default:
		return w.skip() // the wrong kind of value, which the decoder names
	}
}

// object reads the keys of an object decoded into the struct t, after its
// "{".
func (w *keyWalker) object(t reflect.Type, path string) error {
	fields := jsonFields(t)
	seen := map[string]bool{}
	for w.dec.More() {
		key, err := w.key()
		if err != nil {
			return err
		}
		ft, ok := fields[key]
		if !ok {
			return w.unknown(fields, path, key)
		}
		if seen[key] {
			return &configError{field: joinKey(path, key), msg: "appears twice in the same object; keep one"}
		}
		seen[key] = true
		if err := w.value(ft, joinKey(path, key)); err != nil {
			return err
		}
	}
	return w.closing()
}

// entries reads a map's entries (tools.mcpServers, a server's env): any
// key, each value decoded into elem.
func (w *keyWalker) entries(elem reflect.Type, path string) error {
	seen := map[string]bool{}
	for w.dec.More() {
		key, err := w.key()
		if err != nil {
			return err
		}
		if seen[key] {
			return &configError{field: joinKey(path, key), msg: "appears twice in the same object; keep one"}
		}
		seen[key] = true
		if err := w.value(elem, joinKey(path, key)); err != nil {
			return err
		}
	}
	return w.closing()
}

func (w *keyWalker) list(elem reflect.Type, path string) error {
	for i := 0; w.dec.More(); i++ {
		if err := w.value(elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	return w.closing()
}

func (w *keyWalker) key() (string, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return "", w.read(err)
	}
	key, _ := tok.(string) // the decoder allows nothing else here
	return key, nil
}

// closing reads the "}" or "]" that ends the current object or list.
func (w *keyWalker) closing() error {
	_, err := w.dec.Token()
	return w.read(err)
}

// skip reads the rest of an object or list whose opening it has read.
func (w *keyWalker) skip() error {
	for depth := 1; depth > 0; {
		tok, err := w.dec.Token()
		if err != nil {
			return w.read(err)
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

func (w *keyWalker) read(err error) error {
	if err == nil {
		return nil
	}
	return jsonError(w.data, err)
}

// unknown names key, which the object at path does not have, and the key
// that was most likely meant: the same key in another case, a near
// spelling among its neighbours, or the same name elsewhere in the file.
func (w *keyWalker) unknown(fields map[string]reflect.Type, path, key string) error {
	full := joinKey(path, key)
	names := make([]string, 0, len(fields))
	for n := range fields {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if strings.EqualFold(n, key) {
			return &configError{field: full, msg: fmt.Sprintf("unknown key: keys are case-sensitive, write %s", joinKey(path, n))}
		}
	}
	if n := nearestKey(key, names); n != "" {
		return &configError{field: full, msg: fmt.Sprintf("unknown key; did you mean %s?", joinKey(path, n))}
	}
	if elsewhere := keysNamed(w.root, "", key); len(elsewhere) > 0 {
		return &configError{field: full, msg: fmt.Sprintf("unknown key here; did you mean %s?", orList(elsewhere))}
	}
	return &configError{field: full, msg: "unknown key"}
}

// jsonFields maps the JSON names of t's fields, as encoding/json names them
// (the tag's name, else the field's; embedded structs' fields promoted), to
// their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				for n, typ := range jsonFields(ft) {
					if _, ok := out[n]; !ok {
						out[n] = typ
					}
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// keysNamed lists the paths of t's keys named key (in any case), through
// nested objects but not into maps or lists.
func keysNamed(t reflect.Type, path, key string) []string {
	var out []string
	for name, ft := range jsonFields(t) {
		p := joinKey(path, name)
		if strings.EqualFold(name, key) {
			out = append(out, p)
		}
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Struct && !reflect.PointerTo(ft).Implements(unmarshalerType) {
			out = append(out, keysNamed(ft, p, key)...)
		}
	}
	slices.Sort(out)
	return out
}

// nearestKey returns the name that key most likely misspells: within an
// edit distance that grows with its length (case aside), or one of them
// starting with the other ("timeout" for "timeoutSeconds"); "" if none.
func nearestKey(key string, names []string) string {
	k := strings.ToLower(key)
	best, bestDist := "", 0
	for _, n := range names {
		l := strings.ToLower(n)
		d := editdist.Distance(k, l)
		ok := d <= max(1, min(3, utf8.RuneCountInString(k)/3))
		if !ok && len(k) >= 4 && len(l) >= 4 && (strings.HasPrefix(l, k) || strings.HasPrefix(k, l)) {
			ok = true
		}
		if ok && (best == "" || d < bestDist) {
			best, bestDist = n, d
		}
	}
	return best
}

func joinKey(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// orList writes "a", "a or b", "a, b or c".
func orList(items []string) string {
	if len(items) == 1 {
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}

// describeToken names a JSON value that is not an object.
func describeToken(tok json.Token) string {
	switch v := tok.(type) {
	case nil:
		return "null"
	case json.Delim:
		return "a list"
	case string:
		return "a string"
	case bool:
		return "true or false"
	case json.Number:
		return "the number " + v.String()
	default:
		return "a different value"
	}
}

// jsonError turns an error of the JSON reader into a sentence with the
// line and column.
func jsonError(data []byte, err error) error {
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &syn):
		line, col := lineCol(data, syn.Offset)
		return &configError{msg: fmt.Sprintf("invalid JSON at line %d, column %d: %s", line, col, syn.Error())}
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return &configError{msg: "invalid JSON: the file ends before the object does"}
	default:
		return &configError{msg: "invalid JSON: " + err.Error()}
	}
}

// jsonKind names what a Go type holds as a person writing JSON says it.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	default:
		return "a different value"
	}
}

// jsonValue names the JSON value encoding/json found ("array", "number
// 1.5") in the same words.
func jsonValue(v string) string {
	switch v {
	case "array":
		return "a list"
	case "object":
		return "an object"
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "bool":
		return "true or false"
	}
	if n, ok := strings.CutPrefix(v, "number "); ok {
		return n
	}
	return v
}

func lineCol(data []byte, off int64) (int, int) {
	off = min(off, int64(len(data)))
	before := data[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := int(off) - bytes.LastIndexByte(before, '\n')
	return line, col
}
