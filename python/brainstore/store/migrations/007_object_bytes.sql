-- value_bytes: the length in bytes of an Object version's stored JSON value. A Context that includes
-- objects picks those its token budget can hold by it, without reading a value it would pass over:
-- it had read, parsed and serialized the Brain's first 1,000 Objects whatever their size (80 values
-- of 1 MiB: 5.2 s and 500 MiB of a worker for one Context). strlen() of the values would read them
-- all at every Context (about 1 ms a MiB).
ALTER TABLE object_versions ADD COLUMN value_bytes BIGINT;
UPDATE object_versions SET value_bytes = strlen(value);
