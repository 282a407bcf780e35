-- The archive: memory/history.jsonl's entries, and the cursors over them.

-- +goose Up
CREATE TABLE archive_entries (
    -- strictly increasing in commit order (archive_counters serialises
    -- appends), never handed out twice
    cursor      bigint PRIMARY KEY,
    -- local time, "YYYY-MM-DD HH:MM", as history.jsonl keeps it
    stamp       text NOT NULL,
    content     text NOT NULL,
    session_key text NOT NULL DEFAULT '',
    -- dreamgate's source of an archive entry: the session generation and
    -- the messages archived, [range_from, range_to)
    session_id  text NOT NULL DEFAULT '',
    range_from  integer NOT NULL DEFAULT 0,
    range_to    integer NOT NULL DEFAULT 0,
    -- the memory scope; '' is the default scope
    scope       text NOT NULL DEFAULT '',
    created_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX archive_entries_session ON archive_entries (session_key, cursor);
CREATE INDEX archive_entries_scope ON archive_entries (scope, cursor);
CREATE INDEX archive_entries_source ON archive_entries (session_key, session_id, cursor) WHERE session_id <> '';

-- 'last': the highest cursor handed out (memory/.cursor); 'dream': the
-- highest Dream has consumed (memory/.dream_cursor).
CREATE TABLE archive_counters (
    name  text PRIMARY KEY,
    value bigint NOT NULL
);
INSERT INTO archive_counters (name, value) VALUES ('last', 0), ('dream', 0);

-- +goose Down
DROP TABLE archive_counters;
DROP TABLE archive_entries;
