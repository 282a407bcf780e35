package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// configKeys lists every leaf key of Config as a dotted path, with its
// type and default value.
func configKeys(prefix string, t reflect.Type, def reflect.Value, out map[string]reflect.Value) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		key := prefix + name
		if f.Type.Kind() == reflect.Struct {
			configKeys(key+".", f.Type, def.Field(i), out)
			continue
		}
		out[key] = def.Field(i)
	}
}

// docType is how docs/config.md names a Go type; "" accepts any wording.
func docType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int64:
		return "integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Bool:
		return "boolean"
	case reflect.Slice:
		if t.Elem().Kind() == reflect.String {
			return "list of strings"
		}
	}
	return ""
}

// Every config key has a row in docs/config.md with the right type, its
// default and the environment variables that set it.
func TestConfigDocCoversEveryKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(repoRoot, "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string][]string{}
	for line := range strings.SplitSeq(string(data), "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		rows[strings.Trim(cells[0], "`")] = cells
	}

	keys := map[string]reflect.Value{}
	configKeys("", reflect.TypeFor[Config](), reflect.ValueOf(defaultConfig()), keys)
	if len(keys) < 30 {
		t.Fatalf("found only %d config keys; the walk is broken", len(keys))
	}
	envFor := map[string][]string{}
	for _, ev := range envVars {
		envFor[ev.field] = append(envFor[ev.field], ev.name)
		if _, ok := rows[ev.name]; !ok {
			t.Errorf("docs/config.md does not list the environment variable %s", ev.name)
		}
	}
	for key, def := range keys {
		cells, ok := rows[key]
		if !ok {
			t.Errorf("docs/config.md has no row for config key %s", key)
			continue
		}
		if len(cells) != 5 || cells[4] == "" {
			t.Errorf("%s: want | key | type | default | environment | meaning |, got %q", key, cells)
			continue
		}
		if want := docType(def.Type()); want != "" && cells[1] != want {
			t.Errorf("%s: type %q, want %q", key, cells[1], want)
		}
		wantDef, _ := json.Marshal(def.Interface())
		if string(wantDef) == "null" {
			wantDef = []byte("[]")
			if def.Kind() == reflect.Map {
				wantDef = []byte("{}")
			}
		}
		if cells[2] != "`"+string(wantDef)+"`" {
			t.Errorf("%s: default %s, want `%s`", key, cells[2], wantDef)
		}
		for _, ev := range envFor[key] {
			if !strings.Contains(cells[3], "`"+ev+"`") {
				t.Errorf("%s: environment column %q lacks %s", key, cells[3], ev)
			}
		}
	}
}
