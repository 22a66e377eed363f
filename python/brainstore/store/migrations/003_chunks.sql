-- The evidence index's durable half: every chunk of a Record with its embedding and the model that
-- made it. The ANN and lexical indexes are rebuilt from these rows when their files are missing.
CREATE TABLE chunks (
    brain_uid   VARCHAR NOT NULL,
    record_id   VARCHAR NOT NULL,
    span_start  INTEGER NOT NULL,
    span_end    INTEGER NOT NULL,
    text        VARCHAR NOT NULL,
    index_text  VARCHAR NOT NULL,
    occurred_at TIMESTAMP NOT NULL,
    speaker     VARCHAR,
    source_name VARCHAR,
    trust       VARCHAR NOT NULL,
    visibility  VARCHAR NOT NULL,
    model       VARCHAR NOT NULL,
    embedding   BLOB NOT NULL
);
