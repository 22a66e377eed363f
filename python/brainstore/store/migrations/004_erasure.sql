-- Idempotent replies quote what their write made (a Record's text, a Brain's name), so they are
-- keyed by what they describe and erased with it: forgetBrain erases every reply under the Brain,
-- forgetRecord the reply of the write that made the Record.
ALTER TABLE idempotency ADD COLUMN brain_uid VARCHAR;
ALTER TABLE idempotency ADD COLUMN resource_id VARCHAR;
-- Replies stored before this migration name their Brain by id in the scope ("<operation>:<brain id>"),
-- or, for createBrain, in the reply body.
UPDATE idempotency SET brain_uid = (
    SELECT b.uid FROM brains b
    WHERE b.namespace = idempotency.namespace AND b.id = split_part(idempotency.scope, ':', 2)
) WHERE NOT starts_with(scope, 'createBrain:');
UPDATE idempotency SET brain_uid = (
    SELECT b.uid FROM brains b
    WHERE b.namespace = idempotency.namespace AND b.id = regexp_extract(idempotency.body, '^\{"id":"([^"]*)"', 1)
) WHERE starts_with(scope, 'createBrain:');
UPDATE idempotency SET resource_id = regexp_extract(body, '^\{"id":"(rec_[^"]*)"', 1)
WHERE starts_with(scope, 'rememberRecord:');
-- Replies of Brains and Records already forgotten quote erased data: they go now.
DELETE FROM idempotency WHERE brain_uid IS NULL;
DELETE FROM idempotency WHERE resource_id = '';
DELETE FROM idempotency WHERE resource_id IS NOT NULL AND resource_id NOT IN (SELECT id FROM records);
