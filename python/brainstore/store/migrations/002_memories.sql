-- Memories as append-only revisions: the highest version of a memory_id is its current state.
-- memory_links lets "which Memories cite this Record" be answered without parsing citations.
-- A deleted Memory is erased (every revision) and leaves a content-free tombstone for delta reads.
CREATE TABLE memory_revisions (
    memory_id     VARCHAR NOT NULL,
    brain_uid     VARCHAR NOT NULL,
    version       INTEGER NOT NULL,
    fingerprint   VARCHAR NOT NULL,
    statement     VARCHAR NOT NULL,
    subject       VARCHAR NOT NULL,
    subject_key   VARCHAR NOT NULL,
    owner         VARCHAR,
    attribute     VARCHAR,
    value         VARCHAR,
    valid_from    TIMESTAMP NOT NULL,
    valid_to      TIMESTAMP,
    recorded_at   TIMESTAMP NOT NULL,
    status        VARCHAR NOT NULL,
    citations     VARCHAR NOT NULL,
    supersedes    VARCHAR,
    superseded_by VARCHAR,
    seq           BIGINT NOT NULL,
    single_valued BOOLEAN NOT NULL,
    negated       BOOLEAN NOT NULL,
    extra         VARCHAR NOT NULL,
    PRIMARY KEY (memory_id, version)
);
CREATE TABLE memory_links (
    brain_uid VARCHAR NOT NULL,
    memory_id VARCHAR NOT NULL,
    version   INTEGER NOT NULL,
    record_id VARCHAR NOT NULL
);
CREATE TABLE memory_tombstones (
    memory_id VARCHAR PRIMARY KEY,
    brain_uid VARCHAR NOT NULL,
    seq       BIGINT NOT NULL,
    erased_at TIMESTAMP NOT NULL
);
