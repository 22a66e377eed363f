-- Several `brainstore serve` processes on one database (PostgreSQL only; DuckDB serves one process).
-- The watermark HMAC key, one row: every process signs and checks Brain-Watermarks with it, so a
-- watermark one process issued is accepted by all. The first process to start inserts it (ON CONFLICT
-- DO NOTHING) and every process reads it back.
CREATE TABLE watermark_secret (
    id     integer PRIMARY KEY CHECK (id = 1),
    secret bytea NOT NULL
);
-- Which Records were erased, at which change sequence: a process whose evidence index still holds an
-- erased Record's chunks (written by another process) removes them before it serves again. Opaque ids
-- and numbers only, like memory_tombstones; erased with the Brain.
CREATE TABLE record_erasures (
    brain_uid text NOT NULL,
    record_id text NOT NULL,
    seq       bigint NOT NULL
);
CREATE INDEX record_erasures_by_brain ON record_erasures (brain_uid, seq);
-- The Records still processing, and which process has claimed each for derivation until when. A row is
-- inserted with its Record and deleted in the transaction that records its outcome (ready or failed) or
-- erases it; a claim is taken under FOR UPDATE SKIP LOCKED and updates the row in place (ids and
-- times only). An expired claim (its process died) is taken again by another process.
CREATE TABLE derivation_queue (
    record_id     text PRIMARY KEY,
    brain_uid     text NOT NULL,
    seq           bigint NOT NULL,
    queued_at     timestamptz NOT NULL,
    owner         text,
    claimed_until timestamptz
);
CREATE INDEX derivation_queue_by_brain ON derivation_queue (brain_uid, seq);
INSERT INTO derivation_queue (record_id, brain_uid, seq, queued_at)
SELECT r.id, r.brain_uid, r.seq, now() FROM records r
WHERE coalesce((SELECT e.status FROM record_events e WHERE e.record_id = r.id ORDER BY e.seq DESC LIMIT 1),
               'processing') = 'processing';
-- The catch-up of another process's cache reads the Records made ready after a sequence number.
CREATE INDEX record_events_by_brain_seq ON record_events (brain_uid, seq);
