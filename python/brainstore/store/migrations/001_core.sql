-- Brains, Records, Objects, idempotent replies and the per-Brain change sequence.
-- Append-only: status changes and Object versions are new rows; deletes erase rows physically.
-- Timestamps are naive UTC; JSON is stored as text so no DuckDB extension is needed offline.
CREATE TABLE brains (
    uid        VARCHAR PRIMARY KEY,
    namespace  VARCHAR NOT NULL,
    id         VARCHAR NOT NULL,
    name       VARCHAR,
    self_type  VARCHAR,
    self_name  VARCHAR,
    created_at TIMESTAMP NOT NULL
);
CREATE TABLE changes (
    brain_uid VARCHAR NOT NULL,
    seq       BIGINT NOT NULL,
    PRIMARY KEY (brain_uid, seq)
);
CREATE TABLE records (
    id          VARCHAR PRIMARY KEY,
    brain_uid   VARCHAR NOT NULL,
    content     VARCHAR NOT NULL,
    source      VARCHAR,
    source_name VARCHAR,
    external_id VARCHAR,
    visibility  VARCHAR NOT NULL,
    occurred_at TIMESTAMP NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    origin      VARCHAR NOT NULL,
    seq         BIGINT NOT NULL
);
CREATE TABLE record_events (
    record_id  VARCHAR NOT NULL,
    brain_uid  VARCHAR NOT NULL,
    seq        BIGINT NOT NULL,
    status     VARCHAR NOT NULL,
    error      VARCHAR,
    memory_ids VARCHAR NOT NULL
);
CREATE TABLE object_versions (
    id          VARCHAR NOT NULL,
    brain_uid   VARCHAR NOT NULL,
    type        VARCHAR NOT NULL,
    key         VARCHAR NOT NULL,
    version     INTEGER NOT NULL,
    value       VARCHAR NOT NULL,
    accepted_by VARCHAR NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    seq         BIGINT NOT NULL,
    PRIMARY KEY (brain_uid, type, key, version)
);
CREATE TABLE idempotency (
    namespace   VARCHAR NOT NULL,
    scope       VARCHAR NOT NULL,
    key         VARCHAR NOT NULL,
    fingerprint VARCHAR NOT NULL,
    status      INTEGER NOT NULL,
    body        VARCHAR NOT NULL,
    watermark   VARCHAR,
    created_at  TIMESTAMP NOT NULL,
    PRIMARY KEY (namespace, scope, key)
);
