-- The platforms' handles for answering a command a person ran (a Slack
-- slash command's response_url, a Discord interaction's token), from the
-- command's acceptance until the handle expires, so that any process, and
-- a restarted one, answers through them.

-- +goose Up
CREATE TABLE reply_handles (
    -- the command's message id as the adapter names it ("slash:…",
    -- "interaction:…")
    key        text PRIMARY KEY,
    -- the adapter's record of the handle
    handle     bytea NOT NULL,
    expires_at timestamptz NOT NULL,
    -- how often the handle was used (Slack accepts a response_url 5 times)
    uses       integer NOT NULL DEFAULT 0
);
CREATE INDEX reply_handles_expiry ON reply_handles (expires_at);

-- +goose Down
DROP TABLE reply_handles;
