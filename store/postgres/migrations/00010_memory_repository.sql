-- The memory repository: the git history of every scope's memory files,
-- as go-git's storage keeps it (gitstore.DB): objects by id, refs with a
-- version each, and a few records (git's config and index, the commit
-- index's parts).

-- +goose Up
CREATE TABLE git_objects (
    -- the object's SHA-1, 20 bytes
    id   bytea PRIMARY KEY,
    -- git's type number: 1 commit, 2 tree, 3 blob, 4 tag
    kind smallint NOT NULL,
    -- the object's content (without git's "<type> <size>" header)
    data bytea NOT NULL
);

CREATE SEQUENCE git_refs_version;

CREATE TABLE git_refs (
    name    text PRIMARY KEY,
    -- an object id, or "ref: <name>"; '' once removed (kept, so that a
    -- process asking what changed since a version learns it)
    value   text NOT NULL,
    -- raised by every change (git_refs_version), in the order writers
    -- commit: writers take the repository's advisory lock first
    version bigint NOT NULL
);
CREATE INDEX git_refs_by_version ON git_refs (version);

CREATE TABLE git_records (
    name text PRIMARY KEY,
    data bytea NOT NULL
);

-- +goose Down
DROP TABLE git_records;
DROP TABLE git_refs;
DROP SEQUENCE git_refs_version;
DROP TABLE git_objects;
