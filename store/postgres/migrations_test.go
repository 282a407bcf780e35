package postgres_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// contracting matches what a migration's Up part may not do while the
// version before it still runs on the database: remove, rename or change
// what that version reads or writes (migrations/README.md).
var contracting = regexp.MustCompile(`(?i)\b(DROP\s+(TABLE|COLUMN|INDEX|VIEW|FUNCTION|TYPE|CONSTRAINT|SCHEMA|TEXT\s+SEARCH)|RENAME\b|ALTER\s+COLUMN\s+\w+\s+(SET\s+DATA\s+)?TYPE|SET\s+NOT\s+NULL|TRUNCATE)`)

// Every migration expands: its Up part only adds, so processes of the
// version before it keep working beside the one that applied it during an
// upgrade. A later release that removes what no version reads any more
// says so on the line before the statement ("-- contracts: …", naming
// the release that stopped using it).
func TestMigrationsOnlyExpand(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("migrations", "*.sql"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no migrations: %v", err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		up, _, ok := strings.Cut(string(data), "-- +goose Down")
		if _, up, ok = strings.Cut(up, "-- +goose Up"); !ok {
			t.Errorf("%s has no -- +goose Up", f)
			continue
		}
		prev := ""
		for line := range strings.SplitSeq(up, "\n") {
			code, _, _ := strings.Cut(line, "--")
			if m := contracting.FindString(code); m != "" && !strings.HasPrefix(strings.TrimSpace(prev), "-- contracts:") {
				t.Errorf("%s: %q contracts the schema while the version before may still run (migrations/README.md): %s", f, m, strings.TrimSpace(line))
			}
			if strings.TrimSpace(line) != "" {
				prev = line
			}
		}
	}
}
