CREATE TABLE outbox (
    id         bigserial PRIMARY KEY,
    topic      text  NOT NULL,
    payload    jsonb NOT NULL,
    sent_at    timestamptz
);
CREATE INDEX outbox_unsent ON outbox (id) WHERE sent_at IS NULL;
