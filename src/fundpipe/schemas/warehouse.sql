-- fundpipe warehouse (DuckDB): what the service holds, the ledger's copy, and what fundpipe
-- recorded — the tables. Applied by fundpipe.warehouse as ordered migrations: each
-- `-- migration: NNN name` section runs once, in its own transaction, and is recorded in
-- `_migrations`. Never edit an applied section; add a new one. Sections hold tables and data
-- changes only: the views and macros are defined once each, as they are, in views.sql, which is
-- run again after these whenever its text changes (fundpipe.warehouse.migrations.apply_views).
-- A section whose views moved there names the checksum it had before ("earlier checksum"), so
-- a warehouse that applied it then still opens.
--
-- Conventions: money is BIGINT cents (`*_cents`); instants are TIMESTAMPTZ (the connection runs
-- with TimeZone = 'UTC'); `last_seen_at` / `seen_at` is the sync's clock when the row was pulled.

-- migration: 001 service tables
CREATE TABLE syncs (
    sync_id VARCHAR PRIMARY KEY,
    started_at TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    vehicles BIGINT,
    financial_accounts BIGINT,
    distributions BIGINT,
    payments BIGINT,
    notifications BIGINT,
    entities BIGINT,
    contacts BIGINT,
    status_changes BIGINT,
    ledger_payments BIGINT
);

CREATE TABLE vehicles (
    id VARCHAR PRIMARY KEY,
    organization VARCHAR,
    name VARCHAR,
    livemode BOOLEAN,
    created_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ,
    last_seen_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE financial_accounts (
    id VARCHAR PRIMARY KEY,
    vehicle VARCHAR NOT NULL,
    name VARCHAR,
    type VARCHAR NOT NULL,               -- depository | brokerage
    bank_name VARCHAR,
    account_number_last_four VARCHAR,    -- never exported to reports
    currency VARCHAR,
    livemode BOOLEAN,
    created_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ,
    last_seen_at TIMESTAMPTZ NOT NULL
);

-- Append-only: one row per account per sync; never updated or deleted.
CREATE TABLE balance_snapshots (
    sync_id VARCHAR NOT NULL,
    seen_at TIMESTAMPTZ NOT NULL,
    financial_account VARCHAR NOT NULL,
    vehicle VARCHAR NOT NULL,
    type VARCHAR NOT NULL,
    total_cents BIGINT NOT NULL,
    available_cents BIGINT NOT NULL,
    total_end_of_last_month_cents BIGINT NOT NULL,
    currency VARCHAR NOT NULL,
    account_updated_at TIMESTAMPTZ
);

CREATE TABLE distributions (
    id VARCHAR PRIMARY KEY,
    name VARCHAR,
    vehicle VARCHAR,
    external_reference VARCHAR,
    distribution_date TIMESTAMPTZ,
    distribution_date_text VARCHAR,      -- as rendered, with the zone's offset
    distribution_timezone VARCHAR,
    short_id VARCHAR,
    status VARCHAR,
    published_at TIMESTAMPTZ,
    approved_at TIMESTAMPTZ,
    executed_at TIMESTAMPTZ,
    cancelled_at TIMESTAMPTZ,
    created_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ,
    sender_url VARCHAR,
    recipient_url VARCHAR,
    livemode BOOLEAN,
    last_seen_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE distribution_payments (
    id VARCHAR PRIMARY KEY,
    distribution VARCHAR NOT NULL,
    amount_cents BIGINT,
    currency VARCHAR,
    distribution_date_override TIMESTAMPTZ,
    status VARCHAR,
    recipient_confirmed_at TIMESTAMPTZ,
    verified_at TIMESTAMPTZ,
    disbursed_at TIMESTAMPTZ,
    failed_at TIMESTAMPTZ,
    failure_reason VARCHAR,
    entity VARCHAR,
    payment_instructions VARCHAR,
    livemode BOOLEAN,
    last_seen_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE distribution_notifications (
    id VARCHAR PRIMARY KEY,
    payment VARCHAR NOT NULL,
    contact VARCHAR,
    livemode BOOLEAN,
    last_seen_at TIMESTAMPTZ NOT NULL
);

-- One row each time a sync sees a distribution or payment in a status it did not have before
-- (the first sighting included, with previous_status NULL).
CREATE TABLE status_history (
    object VARCHAR NOT NULL,             -- distribution | distribution_payment
    id VARCHAR NOT NULL,
    previous_status VARCHAR,
    status VARCHAR,
    seen_at TIMESTAMPTZ NOT NULL,
    sync_id VARCHAR NOT NULL
);

CREATE TABLE entities (
    id VARCHAR PRIMARY KEY,
    name VARCHAR,
    type VARCHAR,
    external_type VARCHAR,
    external_reference VARCHAR,
    payment_instructions VARCHAR[],
    livemode BOOLEAN,
    created_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ,
    last_seen_at TIMESTAMPTZ NOT NULL
);

CREATE TABLE contacts (
    id VARCHAR PRIMARY KEY,
    name VARCHAR,
    email VARCHAR,
    external_reference VARCHAR,
    entities VARCHAR[],
    livemode BOOLEAN,
    created_at TIMESTAMPTZ,
    updated_at TIMESTAMPTZ,
    last_seen_at TIMESTAMPTZ NOT NULL
);

-- The ledger's tables (docs/architecture.md, "Ledger ↔ warehouse seam"), replaced wholesale by
-- each sync from the ledger file; empty when there is no ledger yet.
CREATE TABLE ledger_payments (
    file_hash VARCHAR,
    source_file VARCHAR,
    sheet VARCHAR,
    "row" INTEGER,
    distribution_external_reference VARCHAR,
    distribution_name VARCHAR,
    vehicle VARCHAR,
    entity VARCHAR,
    amount_cents BIGINT,
    currency VARCHAR,
    distribution_id VARCHAR,
    payment_id VARCHAR,
    state VARCHAR,                       -- planned | sent | created | linked | conflict | failed
    updated_at TIMESTAMPTZ
);

CREATE TABLE ledger_files (
    file_hash VARCHAR,
    source_file VARCHAR,
    received_at TIMESTAMPTZ,
    state VARCHAR,                       -- processing | processed | rejected | conflict
    "rows" INTEGER,
    distributions INTEGER,
    total_cents BIGINT
);

-- migration: 002 reconciliation views
-- (its views and macros are now in views.sql) earlier checksum: fddf8f2db7548d5bc78db50e51604b9f3a1e52751bd8206e1809cc55cc9f311b

-- migration: 003 effective dates per distribution
-- (its views and macros are now in views.sql) earlier checksum: 996bff500f7729495dc6e008edc14ce206d87bb25a526a6165503b051ea4bfa4

-- migration: 004 exception amounts
-- (its views and macros are now in views.sql) earlier checksum: 8e0353d012d97defa55bfba65420101111e63910e59826f8c9e597c02a962285

-- migration: 005 unexplained balances are a depository matter
-- (its views and macros are now in views.sql) earlier checksum: ac95f335b4800470d887dc7797154ef6828337b75a9f96dad1f51dc722c07cde

-- migration: 006 payments without the sandbox-only fields
-- (its views and macros are now in views.sql) earlier checksum: 4bfc4de1788cc09e7728651b0e76b0e552126822498b7d4a448d522ce8aa31be

-- migration: 007 one row per service payment; exception ids and their lifecycle
-- (its views and macros are now in views.sql) earlier checksum: 1022dd2b73511dc239b70a22df9d288052464991f2ffd5f698ccd0d3fd056ded
-- The exception lifecycle, kept by `fundpipe.reconcile.lifecycle`: one row per exception id,
-- open → resolved (its condition gone) or open → acknowledged (by a person, with a note) → resolved.
CREATE TABLE exception_log (
    id VARCHAR NOT NULL,
    kind VARCHAR NOT NULL,
    object_type VARCHAR,
    object_id VARCHAR,
    state VARCHAR NOT NULL,              -- open | acknowledged | resolved
    first_seen DATE NOT NULL,
    last_seen DATE NOT NULL,
    resolved_on DATE,
    acknowledged_by VARCHAR,
    acknowledged_at TIMESTAMPTZ,
    note VARCHAR,
    vehicle VARCHAR,
    source_file VARCHAR,
    "row" INTEGER,
    amount_cents BIGINT,
    what VARCHAR,
    action VARCHAR,
    updated_at TIMESTAMPTZ NOT NULL
);

-- migration: 008 sync state per list
-- When each top-level list the sync walks newest first (distributions, entities, contacts) was
-- last walked whole (`full`) or only down to what the warehouse already held (`incremental`).
-- Written by fundpipe.sync after its merge has committed. A list without a row has never been
-- synced completely into this file: its next sync walks it whole.
CREATE TABLE sync_lists (
    list VARCHAR PRIMARY KEY,
    last_full_at TIMESTAMPTZ,
    last_full_sync_id VARCHAR,
    last_incremental_at TIMESTAMPTZ,
    last_incremental_sync_id VARCHAR
);

-- migration: 009 point-in-time as-of
-- (its views and macros are now in views.sql) earlier checksum: 7569de44c7270b71042aa15968a814cd2e7f4ef7852e9bc236f41fb2bfc3e663
-- Append-only: the row a sync replaced when it saw the payment (distribution) changed, with the
-- instant and sync of the change (fundpipe.sync.merge, schemas/warehouse_merge.sql).
CREATE TABLE distribution_payment_history AS
SELECT *, NULL::TIMESTAMPTZ AS replaced_at, NULL::VARCHAR AS replaced_by_sync
FROM distribution_payments LIMIT 0;

CREATE TABLE distribution_history AS
SELECT *, NULL::TIMESTAMPTZ AS replaced_at, NULL::VARCHAR AS replaced_by_sync
FROM distributions LIMIT 0;

-- Append-only: when a sync first saw a vehicle or financial account.
CREATE TABLE object_first_seen (
    object VARCHAR NOT NULL,             -- vehicle | financial_account
    id VARCHAR NOT NULL,
    seen_at TIMESTAMPTZ NOT NULL,
    sync_id VARCHAR
);
INSERT INTO object_first_seen
SELECT 'vehicle', v.id,
       coalesce((SELECT min(b.seen_at) FROM balance_snapshots b WHERE b.vehicle = v.id),
                v.last_seen_at),
       NULL
FROM vehicles v;
INSERT INTO object_first_seen
SELECT 'financial_account', a.id,
       coalesce((SELECT min(b.seen_at) FROM balance_snapshots b WHERE b.financial_account = a.id),
                a.last_seen_at),
       NULL
FROM financial_accounts a;

-- Append-only: each ledger file's state as each sync copied it (when it is new or changed).
CREATE TABLE file_sightings (
    file_hash VARCHAR NOT NULL,
    state VARCHAR,
    seen_at TIMESTAMPTZ NOT NULL,
    sync_id VARCHAR
);
INSERT INTO file_sightings
SELECT file_hash, state, coalesce(received_at, TIMESTAMPTZ '1970-01-01 00:00:00+00'), NULL
FROM ledger_files WHERE file_hash IS NOT NULL;

-- migration: 010 exception event history
-- (its views and macros are now in views.sql) earlier checksum: cc14625b2fb8ba0365b4bf37392f52d134f9b52f7cb3467276be8be103aec57a
-- Append-only: every change to an exception is an event — opened, amount_changed,
-- acknowledged, assigned, reopened, resolved — with when (`event_at`; `as_of`: the reconciliation's
-- date, or the day a person acted), who (the declared name; `fundpipe` for a reconciliation;
-- and the operating-system user), the amount at that moment and the note. Nothing is updated
-- in place; `exception_states(cutoff)` folds the events recorded before `cutoff` into each
-- exception's state (fundpipe.reconcile.lifecycle). `seq` is the order they were recorded in.
CREATE SEQUENCE exception_event_seq;
CREATE TABLE exception_events (
    seq BIGINT NOT NULL DEFAULT nextval('exception_event_seq'),
    exception_id VARCHAR NOT NULL,
    event VARCHAR NOT NULL,
    event_at TIMESTAMPTZ NOT NULL,
    as_of DATE NOT NULL,
    by_name VARCHAR,
    os_user VARCHAR,
    amount_cents BIGINT,
    note VARCHAR,
    assignee VARCHAR,
    kind VARCHAR,
    object_type VARCHAR,
    object_id VARCHAR,
    vehicle VARCHAR,
    source_file VARCHAR,
    "row" INTEGER,
    what VARCHAR,
    action VARCHAR
);

-- Append-only: each reconciliation that updated the events (its as-of date and clock).
CREATE TABLE exception_runs (
    as_of DATE NOT NULL,
    run_at TIMESTAMPTZ NOT NULL
);

-- Today's exception_log rows become their first events: opened on the first-seen date, the
-- acknowledgement (who, when, note, at the amount last recorded), resolved on its date, or
-- reopened when it was open again after an acknowledgement. exception_log is no longer written.
INSERT INTO exception_events (exception_id, event, event_at, as_of, by_name, os_user, amount_cents,
    note, kind, object_type, object_id, vehicle, source_file, "row", what, action)
SELECT id, ev.event,
       CASE ev.event
           WHEN 'opened' THEN timezone('UTC', CAST(first_seen AS TIMESTAMP))
           WHEN 'acknowledged' THEN coalesce(acknowledged_at, updated_at)
           WHEN 'resolved' THEN greatest(timezone('UTC', CAST(resolved_on AS TIMESTAMP)),
                                         coalesce(acknowledged_at, timezone('UTC', CAST(first_seen AS TIMESTAMP))))
                                + INTERVAL 1 MICROSECOND
           ELSE updated_at
       END,
       CASE ev.event
           WHEN 'opened' THEN first_seen
           WHEN 'acknowledged' THEN CAST(timezone('UTC', coalesce(acknowledged_at, updated_at)) AS DATE)
           WHEN 'resolved' THEN resolved_on
           ELSE last_seen
       END,
       CASE ev.event WHEN 'acknowledged' THEN acknowledged_by ELSE 'fundpipe' END,
       NULL,
       amount_cents,
       CASE ev.event
           WHEN 'opened' THEN 'migrated from the exception log'
           WHEN 'acknowledged' THEN note
           WHEN 'reopened' THEN 'open again after its acknowledgement (before the event history)'
           ELSE NULL
       END,
       kind, object_type, object_id, vehicle, source_file, "row", what, action
FROM exception_log
JOIN (VALUES (1, 'opened'), (2, 'acknowledged'), (3, 'resolved'), (4, 'reopened')) ev(step, event)
  ON ev.event = 'opened'
  OR (ev.event = 'acknowledged' AND acknowledged_by IS NOT NULL)
  OR (ev.event = 'resolved' AND state = 'resolved')
  OR (ev.event = 'reopened' AND state = 'open' AND acknowledged_by IS NOT NULL)
ORDER BY id, ev.step;

INSERT INTO exception_runs
SELECT last_seen, max(updated_at) FROM exception_log GROUP BY last_seen;

-- migration: 011 period close and after-close adjustments
-- (its views and macros are now in views.sql) earlier checksum: 64dc45b0043714a74e3db69e0e87566fcdb30cd031bf6e4e3a7ea6082ab34d4a
-- Append-only: each close of a month (`closed`: by whom, the manifest's SHA-256, the sync it
-- was built from, its as-of and cutoff) and each review (`reviewed`), by fundpipe.reconcile.close.
CREATE SEQUENCE period_event_seq;
CREATE TABLE period_events (
    seq BIGINT NOT NULL DEFAULT nextval('period_event_seq'),
    period VARCHAR NOT NULL,             -- YYYY-MM
    event VARCHAR NOT NULL,              -- closed | reviewed
    event_at TIMESTAMPTZ NOT NULL,
    by_name VARCHAR NOT NULL,
    os_user VARCHAR,
    manifest_sha256 VARCHAR,
    sync_id VARCHAR,
    as_of DATE,
    cutoff TIMESTAMPTZ,
    folder VARCHAR
);

-- migration: 020 distribution tie-out
-- (its views and macros are now in views.sql) earlier checksum: 4deb6cc174ac1c65070cb2bdfbac92b202ae14d489e3f6e36371c6d4c80c0e25

-- migration: 021 roll-forward and reconciling items
-- (its views and macros are now in views.sql) earlier checksum: 301008e0520667a0cf82ad5780471cb705b919f9b59b6080d173c4db5d5b140e

-- migration: 022 roll-forward opens at the closed period's closing; movements per distribution
-- (its views and macros are now in views.sql) earlier checksum: 2a2313afaed6ab877fdae7d82d691e448435933eb2e8e5ea5cd29a73d39281ec
-- A period close (fundpipe.reconcile.close) records each account's closing balance in its closed
-- report (the service's total at the month's last balance) here, in the close's own write.
-- Append-only; a close is made once per month.
CREATE TABLE period_closing_balances (
    period VARCHAR NOT NULL,             -- YYYY-MM, the closed month
    financial_account VARCHAR NOT NULL,
    closing_cents BIGINT NOT NULL,
    balance_seen_at TIMESTAMPTZ,
    recorded_at TIMESTAMPTZ NOT NULL
);

-- migration: 026 a returned payment is a return
-- (its views and macros are now in views.sql) earlier checksum: dabaf47066d5ed32b5083be52a47a40961c0c03882ee634327e86cfcb2933921

-- migration: 027 an after-close adjustment is the one exception of a late change
-- (its views and macros are now in views.sql) earlier checksum: 04245fd7520b69129b85bcd103f30682e4b21c6fd1fde881e9f526ba967bd59a

-- migration: 028 materiality
-- (its views and macros are now in views.sql) earlier checksum: 7ee351d8a0c837ec16aa763a0ce6eb38ac5f01d14a55cc983d4862835927afcd

-- migration: 029 a person settles a rejected file
-- (its views and macros are now in views.sql) earlier checksum: d52445e152db6d523829941e530432f8b5229bc51369db6a6617b760f8656046

-- migration: 030 a corrected file supersedes the rejected one
-- (its views and macros are now in views.sql) earlier checksum: 61cf745a3e4030e5db140b76c69ee7eb41c552108198814c17342e75ce45ca87
-- The distribution references each rejected file names (the ledger's copy, replaced wholesale by
-- each sync, as ledger_files is). A rejected file stops being an exception once a file (before
-- or after it) that carries all of them was processed — the corrected sheet dropped under a
-- new name, or the good copy a broken one duplicates —
-- besides the cases of migration 007 (the same name, or a file holding any of its distributions
-- in the ledger's rows).
CREATE TABLE ledger_file_distributions (
    file_hash VARCHAR,
    distribution_external_reference VARCHAR
);

-- migration: 040 knowledge time; month-end balances; period versions and decisions
-- (its views and macros are now in views.sql) earlier checksum: 812a0033b6c76bf2617443d3bf795e3b810dd4f84ad780b29554d9bba771bd6d
-- Period decisions (fundpipe.reconcile.periods.record_decision): `closed` (a version of the
-- package: `version`, `provisional` when the service's month-end balance was not yet known),
-- `reviewed` / `rejected` (of that version, with the review file's SHA-256 and the reason),
-- `reopened` (with the reason), `certified` (the first sync that read the month-end balance of a
-- provisional close). `one_person`: the organization allowed one person to prepare and review.
ALTER TABLE period_events ADD COLUMN version INTEGER;
ALTER TABLE period_events ADD COLUMN reason VARCHAR;
ALTER TABLE period_events ADD COLUMN review_sha256 VARCHAR;
ALTER TABLE period_events ADD COLUMN one_person BOOLEAN;
ALTER TABLE period_events ADD COLUMN provisional BOOLEAN;

-- Each closing balance recorded (at a close, or when a sync certified a provisional one); the
-- roll-forward opens at the last one recorded by the knowledge time.
ALTER TABLE period_closing_balances RENAME TO period_closing_records;
ALTER TABLE period_closing_records ADD COLUMN version INTEGER;
ALTER TABLE period_closing_records ADD COLUMN source VARCHAR;  -- month_end | provisional

-- migration: 041 a rejected sheet's exception in words
-- (its views and macros are now in views.sql) earlier checksum: 3e3b1066e4cefd2477224fde944f0180f73efb912c63bc6c3e57391d918399bc
