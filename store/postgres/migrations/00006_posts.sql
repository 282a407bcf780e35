-- The parts of answers posted to a chat platform, by idempotency key, so
-- an answer sent again (a restart, a takeover) skips what went out.

-- +goose Up
CREATE TABLE posts (
    -- channels.PostKey: the answered message's id and the part's number
    key        text PRIMARY KEY,
    -- the platform's id of the message made ('' when unknown)
    message_id text NOT NULL DEFAULT '',
    posted_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX posts_age ON posts (posted_at);

-- +goose Down
DROP TABLE posts;
