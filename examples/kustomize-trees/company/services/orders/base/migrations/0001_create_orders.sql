CREATE TABLE orders (
    id          uuid PRIMARY KEY,
    customer_id uuid        NOT NULL,
    status      text        NOT NULL DEFAULT 'NEW',
    total_cents bigint      NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now()
);
