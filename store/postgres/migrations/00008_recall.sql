-- The recall index: what memory no longer shows (archive entries,
-- conversations' archived messages, cold memory lines), each document in
-- one memory scope, found by its words with PostgreSQL's full-text search;
-- and the marks that say how far the index read its sources. Every
-- process searches these tables; one at a time updates them (an advisory
-- lock).

-- +goose Up
-- Words are matched as the embedded engine (SQLite's FTS5 'porter'
-- tokenizer) matches them: the original Porter stemmer, no stop words.
-- The engine hands PostgreSQL the text's words already split into runs of
-- letters and digits, lowercased and without diacritics, so the parser
-- sees nothing but words and numbers.
CREATE TEXT SEARCH DICTIONARY recall_stem (TEMPLATE = snowball, Language = porter);
CREATE TEXT SEARCH CONFIGURATION recall_words (PARSER = default);
ALTER TEXT SEARCH CONFIGURATION recall_words
    ADD MAPPING FOR asciiword, word, numword, uint, int, float, sfloat, version WITH recall_stem;

CREATE TABLE recall_docs (
    id           bigserial PRIMARY KEY,
    -- the memory scope; '' is the default scope
    scope        text NOT NULL,
    -- when it was said, to order by: the minute since 2020 << 15, then the
    -- minute's documents in the order they were added
    ord          bigint NOT NULL,
    -- 1 archive entry, 2 message, 3 cold memory line
    kind         smallint NOT NULL,
    -- unix seconds, 0 when unknown
    at           bigint NOT NULL,
    conversation text NOT NULL DEFAULT '',
    -- an entry's cursor, a message's index, a cold line's number
    pos          integer NOT NULL,
    who          text NOT NULL DEFAULT '',
    body         text NOT NULL,
    words        tsvector NOT NULL
);
CREATE INDEX recall_docs_scope ON recall_docs (scope, ord);
CREATE INDEX recall_docs_words ON recall_docs USING gin (words);
CREATE INDEX recall_docs_cold ON recall_docs (scope) WHERE kind = 3;

-- each scope's count of documents, which a search's word rarity needs
CREATE TABLE recall_scopes (
    scope text PRIMARY KEY,
    docs  bigint NOT NULL DEFAULT 0
);

-- how far the index read its sources (recall's marks), named so that a
-- prefix finds a kind of them
CREATE TABLE recall_marks (
    name  text COLLATE "C" PRIMARY KEY,
    value text NOT NULL
);

-- +goose Down
DROP TABLE recall_marks;
DROP TABLE recall_scopes;
DROP TABLE recall_docs;
DROP TEXT SEARCH CONFIGURATION recall_words;
DROP TEXT SEARCH DICTIONARY recall_stem;
