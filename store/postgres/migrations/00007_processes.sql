-- Many processes, one assistant: the processes that joined the database,
-- the conversations each claims and the leases each holds. A process is
-- live while its connection holds its advisory lock; a claim or lease is
-- held while its holder's connection holds the advisory lock of its name.
-- These rows say who holds what since when, for status and takeovers.

-- +goose Up
CREATE TABLE processes (
    id         bigserial PRIMARY KEY,
    host       text NOT NULL,
    pid        integer NOT NULL,
    version    text NOT NULL DEFAULT '',
    started_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE claims (
    conversation text PRIMARY KEY,
    process      bigint NOT NULL,
    since        timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX claims_process ON claims (process);

CREATE TABLE leases (
    name    text PRIMARY KEY,
    -- NULL once let go
    process bigint,
    -- raised at every taking: the holder's writes are checked against it
    epoch   bigint NOT NULL,
    since   timestamptz NOT NULL DEFAULT now()
);

-- when the database received each inbox message (its own clock): a
-- conversation no process claimed yet is left a moment to the process
-- that received it before the others look at it
ALTER TABLE inbox_messages ADD COLUMN received_at timestamptz NOT NULL DEFAULT now();

-- +goose Down
ALTER TABLE inbox_messages DROP COLUMN received_at;
DROP TABLE leases;
DROP TABLE claims;
DROP TABLE processes;
