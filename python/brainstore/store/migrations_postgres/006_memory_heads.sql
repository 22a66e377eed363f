-- The current revision of each Memory: what ranks it among the Memories of its key (its status and
-- validity) and the keys it is looked up by, kept in the transactions that write or erase its
-- revisions. The newest Memories of a key (memories_by_fingerprints / memories_by_attributes with
-- newest=) are read down these indexes, a few rows a key, where ranking every Memory the key ever had
-- made a Record's derivation cost grow with its key's history (17 ms a lookup at 3,000 Memories of one
-- assertion); and the Memories pending re-derivation are found among those pending now. Servers of a
-- version before this migration write revisions without heads: stop them before it runs.
--
-- Writers of revisions in flight commit before the backfill reads them; a writer that comes after waits
-- until this commits, and then reads the schema version again before it writes heads (PostgresStore).
LOCK TABLE memory_revisions IN SHARE MODE;
CREATE TABLE memory_heads (
    memory_id   text PRIMARY KEY,
    brain_uid   text NOT NULL,
    version     integer NOT NULL,
    status      text NOT NULL,
    fingerprint text NOT NULL,
    subject_key text NOT NULL,
    attribute   text,
    valid_from  timestamptz NOT NULL,
    valid_to    timestamptz
);
CREATE INDEX memory_heads_by_brain ON memory_heads (brain_uid);
-- In the order of store.base.LATEST_ENDING_SQL, over the statuses of WEIGHED_SQL.
CREATE INDEX memory_heads_by_fingerprint
    ON memory_heads (brain_uid, fingerprint, valid_to DESC NULLS FIRST, valid_from DESC, memory_id DESC)
    WHERE status IN ('active', 'pending');
CREATE INDEX memory_heads_by_attribute
    ON memory_heads (brain_uid, subject_key, attribute, valid_to DESC NULLS FIRST, valid_from DESC, memory_id DESC)
    WHERE status IN ('active', 'pending');
-- The Memories pending re-derivation now, which every process scans for every few seconds: the pending
-- revisions since revised stay in memory_revisions_pending, and made that scan grow with every forget.
CREATE INDEX memory_heads_pending ON memory_heads (memory_id) WHERE status = 'pending';
INSERT INTO memory_heads
SELECT DISTINCT ON (memory_id) memory_id, brain_uid, version, status, fingerprint, subject_key, attribute, valid_from,
       valid_to
FROM memory_revisions ORDER BY memory_id, version DESC;
