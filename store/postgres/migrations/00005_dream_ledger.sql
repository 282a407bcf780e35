-- Dream's ledger: its one record, and who holds the Dream lock since when
-- (the locks themselves are advisory locks held by a connection, released
-- with it when its process dies).

-- +goose Up
CREATE TABLE dream_ledger (
    id         integer PRIMARY KEY DEFAULT 1 CHECK (id = 1),
    record     text,
    -- when the Dream lock's holder started; NULL while nobody holds it
    dreaming_since timestamptz,
    updated_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO dream_ledger (id) VALUES (1);

-- +goose Down
DROP TABLE dream_ledger;
