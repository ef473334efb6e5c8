-- fundpipe ledger (DuckDB, `Settings.ledger_file`): intents and outcomes of every submission.
-- Applied by fundpipe.warehouse.migrations as ordered migrations, like schemas/warehouse.sql:
-- each `-- migration: NNN name` section runs once, in its own transaction, recorded in
-- `_migrations` with a checksum. Never edit an applied section: add a new one.
-- The warehouse copies ledger_files and ledger_payments (the columns its own tables declare in
-- schemas/warehouse.sql; tests/warehouse/test_ledger_seam.py checks they exist here).

-- migration: 001 ledger tables
-- IF NOT EXISTS: ledgers written before migrations existed already have these tables.
-- one row per file content hash
CREATE TABLE IF NOT EXISTS ledger_files (
    file_hash VARCHAR PRIMARY KEY,
    source_file VARCHAR,
    received_at TIMESTAMPTZ,
    state VARCHAR,
    rows INTEGER,
    distributions INTEGER,
    total_cents BIGINT,
    message VARCHAR,
    updated_at TIMESTAMPTZ
);
-- one row per sheet payment row
CREATE TABLE IF NOT EXISTS ledger_payments (
    file_hash VARCHAR,
    source_file VARCHAR,
    sheet VARCHAR,
    row INTEGER,
    distribution_external_reference VARCHAR,
    distribution_name VARCHAR,
    vehicle VARCHAR,
    entity VARCHAR,
    amount_cents BIGINT,
    currency VARCHAR,
    distribution_id VARCHAR,
    payment_id VARCHAR,
    state VARCHAR,
    updated_at TIMESTAMPTZ,
    request_key VARCHAR,
    position INTEGER
);
-- one row per request, keyed by its Idempotency-Key
CREATE TABLE IF NOT EXISTS ledger_requests (
    key VARCHAR PRIMARY KEY,
    phase VARCHAR,
    method VARCHAR,
    path VARCHAR,
    label VARCHAR,
    file_hashes VARCHAR,
    distribution_refs VARCHAR,
    body VARCHAR,
    state VARCHAR,
    attempts INTEGER,
    status INTEGER,
    request_id VARCHAR,
    service_ids VARCHAR,
    error VARCHAR,
    intent_at TIMESTAMPTZ,
    outcome_at TIMESTAMPTZ
);

-- migration: 002 own references
-- fundpipe's own references (JSON list, body order) of the objects a request creates without
-- sending them one: contacts and payment instructions, whose public inputs have no
-- `external_reference` (the roster's reference is kept here, beside the ids in service_ids).
ALTER TABLE ledger_requests ADD COLUMN IF NOT EXISTS own_references VARCHAR;

-- migration: 003 a rejected file's distributions
-- The distribution references a rejected file names (where they could be read): nothing of it
-- reaches ledger_payments, yet a later file carrying all of them is its correction.
CREATE TABLE IF NOT EXISTS ledger_file_distributions (
    file_hash VARCHAR,
    distribution_external_reference VARCHAR,
    PRIMARY KEY (file_hash, distribution_external_reference)
);

-- migration: 004 files dropped again
-- One row per drop of a content already known (processed on an earlier run, or twice in one
-- drop): the name it came with, when it was dropped, and the earlier file it repeats. processed/
-- keeps one file per content; this table keeps the record of every drop.
CREATE TABLE IF NOT EXISTS ledger_redrops (
    file_hash VARCHAR,
    source_file VARCHAR,
    dropped_at TIMESTAMPTZ,
    same_as VARCHAR,
    same_as_processed_at TIMESTAMPTZ
);
