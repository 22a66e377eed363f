-- A Record's status is its latest event: getRecord and derivation look a Record's events up by id.
-- Without an index that is a scan of every tenant's events (about 7 ms per getRecord at 100,000
-- Records, growing with the table); with it a point lookup (about 0.6 ms). DuckDB uses an index only
-- for a filter on the indexed column alone, so the lookups filter by record id and check the Brain
-- on the rows they get.
CREATE INDEX record_events_by_record ON record_events (record_id);
