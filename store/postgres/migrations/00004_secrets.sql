-- Secrets made once and shared (the memory page's key), and one-time
-- values used once (its sign-in links).

-- +goose Up
CREATE TABLE secrets (
    name       text PRIMARY KEY,
    value      bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE used_nonces (
    -- what they are for: "web-link"
    kind       text NOT NULL,
    nonce      text NOT NULL,
    expires_at timestamptz NOT NULL,
    PRIMARY KEY (kind, nonce)
);
CREATE INDEX used_nonces_expiry ON used_nonces (expires_at);

-- +goose Down
DROP TABLE used_nonces;
DROP TABLE secrets;
