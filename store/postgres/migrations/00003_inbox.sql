-- The inbox: platform messages from acceptance to answer.

-- +goose Up
CREATE TABLE inbox_messages (
    -- the inbox of one gateway process that owns channels (one Discord
    -- shard): "inbox", "inbox.shard-1", ...
    box          text NOT NULL,
    channel      text NOT NULL,
    message_id   text NOT NULL,
    -- the session key: work shared by conversation claims by it
    conversation text NOT NULL,
    -- gateway/session's Origin, JSON
    origin       text NOT NULL,
    body         text NOT NULL DEFAULT '',
    accepted_at  timestamptz NOT NULL,
    seq          bigserial NOT NULL,
    -- NULL while open
    answered_at  timestamptz,
    PRIMARY KEY (box, channel, message_id)
);
CREATE INDEX inbox_messages_open ON inbox_messages (box, seq) WHERE answered_at IS NULL;
CREATE INDEX inbox_messages_conversation ON inbox_messages (conversation, seq) WHERE answered_at IS NULL;

-- +goose Down
DROP TABLE inbox_messages;
