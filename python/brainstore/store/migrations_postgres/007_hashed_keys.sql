-- Keys made of long texts are indexed by the md5 of each part instead of the texts: a B-tree entry
-- holds at most 2,704 bytes. A fact Record's subject and predicate may each be 1,000 characters (up to
-- 4,000 bytes of UTF-8), so such a Record's Memory could not be written and its derivation failed for
-- ever; an imported Record's source name and external id may each be 500. Lookups match the hashes
-- down the index, then the texts exactly.
DROP INDEX memory_revisions_by_attribute;
CREATE INDEX memory_revisions_by_attribute ON memory_revisions (brain_uid, md5(subject_key), md5(attribute));
DROP INDEX memory_heads_by_attribute;
CREATE INDEX memory_heads_by_attribute
    ON memory_heads (brain_uid, md5(subject_key), md5(attribute), valid_to DESC NULLS FIRST, valid_from DESC, memory_id DESC)
    WHERE status IN ('active', 'pending');
-- The same for an imported Record's (source name, external id), of up to 500 characters each.
DROP INDEX records_imported;
CREATE INDEX records_imported ON records (brain_uid, md5(source_name), md5(external_id)) WHERE origin = 'import';
