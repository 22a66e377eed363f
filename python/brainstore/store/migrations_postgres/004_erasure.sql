-- Idempotent replies quote what their write made (a Record's text, a Brain's name), so they are keyed by
-- what they describe and erased with it (StoreFeature.ERASURE): forgetBrain erases every reply under the
-- Brain, forgetRecord the reply of the write that made the Record.
ALTER TABLE idempotency ADD COLUMN brain_uid text;
ALTER TABLE idempotency ADD COLUMN resource_id text;
-- Replies stored before this migration name their Brain by id in the scope ("<operation>:<brain id>"),
-- or, for createBrain, in the reply body.
UPDATE idempotency SET brain_uid = (
    SELECT b.uid FROM brains b
    WHERE b.namespace = idempotency.namespace AND b.id = split_part(idempotency.scope, ':', 2)
) WHERE NOT starts_with(scope, 'createBrain:');
UPDATE idempotency SET brain_uid = (
    SELECT b.uid FROM brains b
    WHERE b.namespace = idempotency.namespace AND b.id = substring(idempotency.body from '^\{"id":"([^"]*)"')
) WHERE starts_with(scope, 'createBrain:');
UPDATE idempotency SET resource_id = coalesce(substring(body from '^\{"id":"(rec_[^"]*)"'), '')
WHERE starts_with(scope, 'rememberRecord:');
-- Replies of Brains and Records already forgotten quote erased data: they go now.
DELETE FROM idempotency WHERE brain_uid IS NULL;
DELETE FROM idempotency WHERE resource_id = '';
DELETE FROM idempotency WHERE resource_id IS NOT NULL AND resource_id NOT IN (SELECT id FROM records);
CREATE INDEX idempotency_by_brain ON idempotency (brain_uid, resource_id);
