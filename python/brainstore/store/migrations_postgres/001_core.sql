-- Brains, Records, Objects, idempotent replies and the per-Brain change sequence (StoreFeature.CORE).
-- Append-only: status changes and Object versions are new rows; deletes erase rows physically. The one
-- row updated in place is a Brain's change counter (brain_sequences): a Brain uid and a number.
-- JSON is stored as text, as in the DuckDB schema: replies and views quote it back unchanged.
CREATE TABLE brains (
    uid        text PRIMARY KEY,
    namespace  text NOT NULL,
    id         text NOT NULL,
    name       text,
    self_type  text,
    self_name  text,
    created_at timestamptz NOT NULL,
    -- Two processes creating the same Brain id at once: one commits, the other fails here.
    UNIQUE (namespace, id)
);
-- The end of each Brain's change sequence. next_seq increments it (INSERT .. ON CONFLICT DO UPDATE), so
-- its row lock is held until the transaction ends: sequence numbers commit in the order they are taken.
CREATE TABLE brain_sequences (
    brain_uid text PRIMARY KEY,
    seq       bigint NOT NULL
);
CREATE TABLE records (
    id          text PRIMARY KEY,
    brain_uid   text NOT NULL,
    content     text NOT NULL,
    source      text,
    source_name text,
    external_id text,
    visibility  text NOT NULL,
    occurred_at timestamptz NOT NULL,
    created_at  timestamptz NOT NULL,
    origin      text NOT NULL,
    seq         bigint NOT NULL
);
CREATE INDEX records_by_brain ON records (brain_uid, seq);
CREATE INDEX records_imported ON records (brain_uid, source_name, external_id) WHERE origin = 'import';
CREATE TABLE record_events (
    record_id  text NOT NULL,
    brain_uid  text NOT NULL,
    seq        bigint NOT NULL,
    status     text NOT NULL,
    error      text,
    memory_ids text NOT NULL
);
CREATE INDEX record_events_by_record ON record_events (record_id, seq);
CREATE INDEX record_events_by_brain ON record_events (brain_uid);
CREATE TABLE object_versions (
    id          text NOT NULL,
    brain_uid   text NOT NULL,
    type        text NOT NULL,
    key         text NOT NULL,
    version     integer NOT NULL,
    value       text NOT NULL,
    accepted_by text NOT NULL,
    created_at  timestamptz NOT NULL,
    seq         bigint NOT NULL,
    PRIMARY KEY (brain_uid, type, key, version)
);
CREATE TABLE idempotency (
    namespace   text NOT NULL,
    scope       text NOT NULL,
    key         text NOT NULL,
    fingerprint text NOT NULL,
    status      integer NOT NULL,
    body        text NOT NULL,
    watermark   text,
    created_at  timestamptz NOT NULL,
    PRIMARY KEY (namespace, scope, key)
);
