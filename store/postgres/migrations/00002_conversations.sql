-- Conversations: gateway/session's message files and metadata as rows.

-- +goose Up
CREATE TABLE conversations (
    key        text NOT NULL,
    -- the generation: new at /new
    id         text NOT NULL,
    -- the key's current generation; false once /new set it aside
    live       boolean NOT NULL DEFAULT true,
    -- the metadata record, the JSON of the embedded engine's .meta.json
    meta       text,
    lines      integer NOT NULL DEFAULT 0,
    created_at timestamptz NOT NULL DEFAULT now(),
    modified   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (key, id)
);
CREATE UNIQUE INDEX conversations_live ON conversations (key) WHERE live;

-- each message a row, the JSON of the embedded engine's message line
CREATE TABLE conversation_lines (
    key  text NOT NULL,
    id   text NOT NULL,
    idx  integer NOT NULL,
    line text NOT NULL,
    PRIMARY KEY (key, id, idx),
    FOREIGN KEY (key, id) REFERENCES conversations (key, id)
);

-- +goose Down
DROP TABLE conversation_lines;
DROP TABLE conversations;
