-- fundpipe sync merge: how one sync's staged pages land in the warehouse (schemas/warehouse.sql).
-- Run by fundpipe.sync.merge in this order, in one transaction. `{name}` is the staged Parquet of
-- that list (one row per id); `$seen_at`, `$sync_id` and `$object_name` are bound parameters.
-- Instants are staged as the service's ISO text and cast here. Column order follows the DDL.
-- Only upserts and appends: nothing is deleted or marked missing, so a sync that pulled only
-- what is new and still open (fundpipe.sync.incremental) leaves every other row as it was.

-- merge: syncs
INSERT INTO syncs (sync_id, started_at) VALUES ($sync_id, $seen_at);

-- merge: vehicles
INSERT OR REPLACE INTO vehicles SELECT id, organization, name, livemode,
    created_at::TIMESTAMPTZ, updated_at::TIMESTAMPTZ, $seen_at FROM {vehicles};

-- merge: financial_accounts
INSERT OR REPLACE INTO financial_accounts SELECT id, vehicle, name, type, bank_name,
    account_number_last_four, currency, livemode, created_at::TIMESTAMPTZ,
    updated_at::TIMESTAMPTZ, $seen_at FROM {financial_accounts};

-- merge: balance_snapshots (appended, never overwritten)
INSERT INTO balance_snapshots SELECT $sync_id, $seen_at, id, vehicle, type, total, available,
    total_end_of_last_month, currency, updated_at::TIMESTAMPTZ
FROM {financial_accounts};

-- merge: status_history of distributions (counted: status changes)
INSERT INTO status_history SELECT 'distribution', s.id, t.status, s.status, $seen_at, $sync_id
FROM {distributions} s LEFT JOIN distributions t ON t.id = s.id
WHERE t.id IS NULL OR t.status IS DISTINCT FROM s.status;

-- merge: status_history of distribution_payments (counted: status changes)
INSERT INTO status_history SELECT 'distribution_payment', s.id, t.status, s.status, $seen_at, $sync_id
FROM {distribution_payments} s LEFT JOIN distribution_payments t ON t.id = s.id
WHERE t.id IS NULL OR t.status IS DISTINCT FROM s.status;

-- merge: distribution_history (the row a change replaces; point-in-time as-of)
INSERT INTO distribution_history BY NAME
SELECT t.*, $seen_at AS replaced_at, $sync_id AS replaced_by_sync
FROM {distributions} s JOIN distributions t ON t.id = s.id
WHERE (t.vehicle, t.name, t.external_reference, t.distribution_date, t.distribution_timezone,
       t.status, t.executed_at, t.cancelled_at)
      IS DISTINCT FROM
      (s.vehicle, s.name, s.external_reference, s.distribution_date::TIMESTAMPTZ,
       s.distribution_timezone, s.status, s.executed_at::TIMESTAMPTZ, s.cancelled_at::TIMESTAMPTZ);

-- merge: distribution_payment_history (the row a change replaces; point-in-time as-of)
INSERT INTO distribution_payment_history BY NAME
SELECT t.*, $seen_at AS replaced_at, $sync_id AS replaced_by_sync
FROM {distribution_payments} s JOIN distribution_payments t ON t.id = s.id
WHERE (t.distribution, t.amount_cents, t.distribution_date_override, t.status, t.disbursed_at,
       t.failed_at, t.failure_reason, t.entity)
      IS DISTINCT FROM
      (s.distribution, s.amount, s.distribution_date_override::TIMESTAMPTZ, s.status,
       s.disbursed_at::TIMESTAMPTZ, s.failed_at::TIMESTAMPTZ, s.failure_reason, s.entity);

-- merge: object_first_seen of vehicles and financial accounts
INSERT INTO object_first_seen
SELECT 'vehicle', s.id, $seen_at, $sync_id FROM {vehicles} s
WHERE s.id NOT IN (SELECT id FROM object_first_seen WHERE object = 'vehicle')
UNION ALL
SELECT 'financial_account', s.id, $seen_at, $sync_id FROM {financial_accounts} s
WHERE s.id NOT IN (SELECT id FROM object_first_seen WHERE object = 'financial_account');

-- merge: distributions
INSERT OR REPLACE INTO distributions SELECT id, name, vehicle, external_reference,
    distribution_date::TIMESTAMPTZ, distribution_date, distribution_timezone, short_id,
    status, published_at::TIMESTAMPTZ, approved_at::TIMESTAMPTZ,
    executed_at::TIMESTAMPTZ, cancelled_at::TIMESTAMPTZ, created_at::TIMESTAMPTZ,
    updated_at::TIMESTAMPTZ, sender_url, recipient_url, livemode, $seen_at
FROM {distributions};

-- merge: distribution_payments
INSERT OR REPLACE INTO distribution_payments SELECT id, distribution, amount,
    currency, distribution_date_override::TIMESTAMPTZ, status,
    recipient_confirmed_at::TIMESTAMPTZ, verified_at::TIMESTAMPTZ,
    disbursed_at::TIMESTAMPTZ, failed_at::TIMESTAMPTZ, failure_reason, entity,
    payment_instructions, livemode, $seen_at FROM {distribution_payments};

-- merge: distribution_notifications
INSERT OR REPLACE INTO distribution_notifications SELECT id, payment, contact,
    livemode, $seen_at FROM {distribution_notifications};

-- merge: entities
INSERT OR REPLACE INTO entities SELECT id, name, type, external_type,
    external_reference, payment_instructions, livemode, created_at::TIMESTAMPTZ,
    updated_at::TIMESTAMPTZ, $seen_at FROM {entities};

-- merge: contacts
INSERT OR REPLACE INTO contacts SELECT id, name, email, external_reference,
    entities, livemode, created_at::TIMESTAMPTZ, updated_at::TIMESTAMPTZ, $seen_at
FROM {contacts};
