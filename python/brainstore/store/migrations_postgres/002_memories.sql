-- Memories as append-only revisions: the highest version of a memory_id is its current state
-- (StoreFeature.MEMORIES). memory_links answers "which Memories cite this Record" without parsing
-- citations. A deleted Memory is erased (every revision) and leaves a content-free tombstone.
-- subject_key and owner_key are the casefolded subject and owner (Python's casefold, which PostgreSQL's
-- lower() matches only for ASCII in the C locale).
CREATE TABLE memory_revisions (
    memory_id     text NOT NULL,
    brain_uid     text NOT NULL,
    version       integer NOT NULL,
    fingerprint   text NOT NULL,
    statement     text NOT NULL,
    subject       text NOT NULL,
    subject_key   text NOT NULL,
    owner         text,
    owner_key     text,
    attribute     text,
    value         text,
    valid_from    timestamptz NOT NULL,
    valid_to      timestamptz,
    recorded_at   timestamptz NOT NULL,
    status        text NOT NULL,
    citations     text NOT NULL,
    supersedes    text,
    superseded_by text,
    seq           bigint NOT NULL,
    single_valued boolean NOT NULL,
    negated       boolean NOT NULL,
    extra         text NOT NULL,
    PRIMARY KEY (memory_id, version)
);
CREATE INDEX memory_revisions_by_brain ON memory_revisions (brain_uid, memory_id, version);
CREATE INDEX memory_revisions_by_fingerprint ON memory_revisions (brain_uid, fingerprint);
CREATE INDEX memory_revisions_by_attribute ON memory_revisions (brain_uid, subject_key, attribute);
CREATE INDEX memory_revisions_by_seq ON memory_revisions (brain_uid, seq);
CREATE INDEX memory_revisions_pending ON memory_revisions (memory_id) WHERE status = 'pending';
CREATE TABLE memory_links (
    brain_uid text NOT NULL,
    memory_id text NOT NULL,
    version   integer NOT NULL,
    record_id text NOT NULL
);
CREATE INDEX memory_links_by_record ON memory_links (brain_uid, record_id);
CREATE INDEX memory_links_by_memory ON memory_links (memory_id, version);
CREATE TABLE memory_tombstones (
    memory_id text PRIMARY KEY,
    brain_uid text NOT NULL,
    seq       bigint NOT NULL,
    erased_at timestamptz NOT NULL
);
CREATE INDEX memory_tombstones_by_brain ON memory_tombstones (brain_uid, seq);
