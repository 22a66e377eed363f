-- owner_key: the owner casefolded by Python (as subject_key, and owner_key on PostgreSQL), which
-- listMemories' owner filter compares. Before it the filter compared DuckDB's lower(owner), which keeps
-- 'ß' (and every other letter whose casefold is not its lower case): owner=Weiß matched no Memory of
-- Weiß's, while the memory and PostgreSQL stores matched it. The update below is lower(); migrate()
-- then sets the keys of the owners whose casefold differs from it.
ALTER TABLE memory_revisions ADD COLUMN owner_key VARCHAR;
UPDATE memory_revisions SET owner_key = lower(owner);
