-- The evidence index's durable half (StoreFeature.CHUNKS): every chunk of a Record with its embedding
-- and the model that made it. The ANN and lexical indexes are rebuilt from these rows.
CREATE TABLE chunks (
    brain_uid   text NOT NULL,
    record_id   text NOT NULL,
    span_start  integer NOT NULL,
    span_end    integer NOT NULL,
    text        text NOT NULL,
    index_text  text NOT NULL,
    occurred_at timestamptz NOT NULL,
    speaker     text,
    source_name text,
    trust       text NOT NULL,
    visibility  text NOT NULL,
    model       text NOT NULL,
    embedding   bytea NOT NULL
);
CREATE INDEX chunks_by_record ON chunks (brain_uid, record_id, span_start);
