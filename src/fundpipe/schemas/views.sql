-- fundpipe warehouse (DuckDB): the views and the macros they use — what the warehouse shows,
-- read from the tables of warehouse.sql. Each is defined once, as it is today. This file is a
-- repeatable migration (fundpipe.warehouse.migrations.apply_views): after warehouse.sql's
-- sections, whenever this file's text differs from the one last run, every view and macro is
-- dropped and the file runs again, in one transaction. Edit a definition in place.
--
-- DuckDB binds a view when it is created, so each view comes after the views and macros it
-- reads. Views only read: they work on a read-only connection. The as-of date is the session
-- variable `as_of`; see each definition for the others (`reporting_timezone`, `known_at`,
-- `materiality_cents`).
--
-- `exceptions` is a stack of layers, each reading the one below: exceptions_before_011 (the
-- service, the sheets, the balances, the files), exceptions_before_020 (+ after-close
-- adjustments), exceptions_before_021 (+ distribution tie-out), exceptions_before_027
-- (+ reconciling items), exceptions_before_028 (an after-close adjustment is the one exception
-- of a late change), exceptions_before_029 (materiality), exceptions_before_041 (a settled
-- rejected file), exceptions (a rejected sheet in words).

-- The as-of date is the session variable `as_of` (SET VARIABLE as_of = DATE '...'); unset means
-- today (UTC). Views only read, so they work on a read-only connection.
CREATE MACRO reconcile_as_of() AS coalesce(TRY_CAST(getvariable('as_of') AS DATE), current_date);

-- The books as of D are what fundpipe knew at the end of D in the reporting timezone (session
-- variable `reporting_timezone`, default UTC; docs/architecture.md, "Point in time"): a fact
-- counts from the moment a sync brought it into this warehouse (the sync's `seen_at`), never
-- from the service's own timestamps, so a re-run of D reads exactly what the last report of D
-- could read. Payments and distributions take their status from `status_history` and their
-- other fields from the `*_history` tables below (the state a later sync replaced); objects
-- first seen after D are left out; ledger files count from the sync that first copied them.
-- The base views keep their names and columns; they now read the `as_of_*` views.
CREATE MACRO reporting_timezone() AS
    coalesce(TRY_CAST(getvariable('reporting_timezone') AS VARCHAR), 'UTC');

-- Two times (docs/architecture.md, "As issued"): the as-of date D is the valid time — the books
-- at the end of D in the reporting timezone (`valid_cutoff()`) — and the session variable
-- `known_at` (a TIMESTAMPTZ; unset: the end of D, as before) is the knowledge time: what this
-- warehouse had learned by then. `reconcile_cutoff()` is now the knowledge cutoff, so every view
-- that asks "was this known by then" (first sightings, replaced rows, exception and period
-- events) reads what was known at `known_at`; the views below also ask "was it so by the end of
-- D": a status a sync saw after D counts only when the service's own time of that status
-- (`disbursed_at`, `failed_at`, … — the sighting itself when the service gives none) is within
-- D, and a balance is the month-end figure or a snapshot seen within D. A report as of a
-- month's last day known after the month (a close on the 2nd) thus shows the payment executed
-- late on the last day, and the acknowledgement of the 1st.
CREATE MACRO valid_cutoff() AS
    timezone(reporting_timezone(), CAST(reconcile_as_of() + 1 AS TIMESTAMP));

CREATE MACRO reconcile_cutoff() AS
    coalesce(TRY_CAST(getvariable('known_at') AS TIMESTAMPTZ), valid_cutoff());

-- Exact decimal dollars and a display string for reasons.
CREATE MACRO dollars(cents) AS CAST(CAST(cents AS DECIMAL(18, 0)) * 0.01 AS DECIMAL(18, 2));

CREATE MACRO usd(cents) AS
    CASE WHEN cents IS NULL THEN 'n/a'
         WHEN cents < 0 THEN '-$' || format('{:,.2f}', dollars(-cents))
         ELSE '$' || format('{:,.2f}', dollars(cents)) END;

-- A sighting that is both so by the end of D and known by the knowledge time.
CREATE MACRO seen_cutoff() AS least(valid_cutoff(), reconcile_cutoff());

-- Every balance a report may read: each snapshot seen by `seen_cutoff()`, plus each account's
-- month-end figure — the `total_end_of_last_month` of its first snapshot of a UTC month, known
-- by the knowledge time — placed at the month's last instant (`month_end`), for every month
-- that ended by the end of D. Its `available` is the month's last snapshot's, moved by the same
-- amount as the total; its `total_end_of_last_month` is that snapshot's (the month's opening).
CREATE VIEW balance_points AS
WITH known AS (
    SELECT b.*, date_trunc('month', timezone('UTC', b.seen_at)) AS month,
           lag(b.seen_at) OVER w AS previous_seen_at,
           lag(b.total_cents) OVER w AS previous_total_cents,
           lag(b.available_cents) OVER w AS previous_available_cents,
           lag(b.total_end_of_last_month_cents) OVER w AS previous_end_of_last_month_cents
    FROM balance_snapshots b
    WHERE b.seen_at < reconcile_cutoff()
    WINDOW w AS (PARTITION BY b.financial_account ORDER BY b.seen_at)
)
SELECT sync_id, seen_at, financial_account, vehicle, type, total_cents, available_cents,
       total_end_of_last_month_cents, currency, account_updated_at, FALSE AS month_end
FROM known
WHERE seen_at < seen_cutoff()
UNION ALL
-- the first snapshot of a month whose previous one is of the month before: that month's end
SELECT sync_id, timezone('UTC', month) - INTERVAL 1 MICROSECOND, financial_account, vehicle,
       type, total_end_of_last_month_cents,
       previous_available_cents + (total_end_of_last_month_cents - previous_total_cents),
       previous_end_of_last_month_cents, currency, account_updated_at, TRUE
FROM known
WHERE previous_seen_at IS NOT NULL
  AND date_trunc('month', timezone('UTC', previous_seen_at)) = month - INTERVAL 1 MONTH
  AND timezone('UTC', month) <= valid_cutoff();

CREATE VIEW balances_as_of AS
SELECT * FROM balance_points
QUALIFY row_number() OVER (PARTITION BY financial_account ORDER BY seen_at DESC) = 1;

-- Payments and distributions as known at the knowledge time and as they stood at the end of D.
-- A row first seen after D counts when it existed by then (its distribution's `created_at`);
-- a timestamp of the service after D is not shown in a report of D.
CREATE VIEW as_of_distribution_payments AS
WITH old AS (
    SELECT * EXCLUDE (replaced_at, replaced_by_sync)
    FROM distribution_payment_history
    WHERE replaced_at >= reconcile_cutoff()
    QUALIFY row_number() OVER (PARTITION BY id ORDER BY replaced_at) = 1
), versions AS (
    SELECT * FROM old
    UNION ALL BY NAME
    SELECT p.* FROM distribution_payments p ANTI JOIN old o ON o.id = p.id
), hist AS (
    SELECT id, min(seen_at) AS first_seen,
           arg_max(status, seen_at) FILTER (WHERE seen_at < seen_cutoff()) AS status_then
    FROM status_history WHERE object = 'distribution_payment'
    GROUP BY id
), learned AS (
    -- statuses seen after D (and by the knowledge time) that were so by the end of D; only a
    -- report known after its day has any (the join stays empty otherwise)
    SELECT h.id, arg_max(h.status, h.seen_at) AS status_then
    FROM status_history h
    JOIN distribution_payments v ON v.id = h.id
    LEFT JOIN distributions d ON d.id = v.distribution
    WHERE h.object = 'distribution_payment'
      AND h.seen_at >= seen_cutoff() AND h.seen_at < reconcile_cutoff()
      AND coalesce(CASE h.status
                       WHEN 'staged' THEN d.created_at
                       WHEN 'recipient_confirmed' THEN v.recipient_confirmed_at
                       WHEN 'verified' THEN v.verified_at
                       WHEN 'disbursed' THEN v.disbursed_at
                       WHEN 'failed' THEN v.failed_at
                       WHEN 'cancelled' THEN d.cancelled_at END,
                   h.seen_at) < valid_cutoff()
    GROUP BY h.id
), born AS (
    -- payments first seen after D whose distribution existed by the end of D
    SELECT h.id
    FROM hist h
    JOIN distribution_payments p ON p.id = h.id
    JOIN distributions d ON d.id = p.distribution
    WHERE h.first_seen >= seen_cutoff() AND h.first_seen < reconcile_cutoff()
      AND d.created_at < valid_cutoff()
), later AS (
    SELECT reconcile_cutoff() > valid_cutoff() AS after_d
)
SELECT r.* REPLACE (
    coalesce(l.status_then, h.status_then, r.status) AS status,
    CASE WHEN later.after_d AND r.recipient_confirmed_at >= valid_cutoff() THEN NULL
         ELSE r.recipient_confirmed_at END AS recipient_confirmed_at,
    CASE WHEN later.after_d AND r.verified_at >= valid_cutoff() THEN NULL
         ELSE r.verified_at END AS verified_at,
    CASE WHEN later.after_d AND r.disbursed_at >= valid_cutoff() THEN NULL
         ELSE r.disbursed_at END AS disbursed_at,
    CASE WHEN later.after_d AND r.failed_at >= valid_cutoff() THEN NULL
         ELSE r.failed_at END AS failed_at,
    CASE WHEN later.after_d AND r.failed_at >= valid_cutoff() THEN NULL
         ELSE r.failure_reason END AS failure_reason)
FROM versions r
CROSS JOIN later
LEFT JOIN hist h ON h.id = r.id
LEFT JOIN learned l ON l.id = r.id
WHERE coalesce(h.first_seen, r.last_seen_at) < seen_cutoff()
   OR r.id IN (SELECT id FROM born);

CREATE VIEW as_of_distributions AS
WITH old AS (
    SELECT * EXCLUDE (replaced_at, replaced_by_sync)
    FROM distribution_history
    WHERE replaced_at >= reconcile_cutoff()
    QUALIFY row_number() OVER (PARTITION BY id ORDER BY replaced_at) = 1
), versions AS (
    SELECT * FROM old
    UNION ALL BY NAME
    SELECT d.* FROM distributions d ANTI JOIN old o ON o.id = d.id
), hist AS (
    SELECT id, min(seen_at) AS first_seen,
           arg_max(status, seen_at) FILTER (WHERE seen_at < seen_cutoff()) AS status_then
    FROM status_history WHERE object = 'distribution'
    GROUP BY id
), learned AS (
    SELECT h.id, arg_max(h.status, h.seen_at) AS status_then
    FROM status_history h
    JOIN distributions v ON v.id = h.id
    WHERE h.object = 'distribution'
      AND h.seen_at >= seen_cutoff() AND h.seen_at < reconcile_cutoff()
      AND coalesce(CASE h.status
                       WHEN 'draft' THEN v.created_at
                       WHEN 'published' THEN v.published_at
                       WHEN 'approved' THEN v.approved_at
                       WHEN 'executed' THEN v.executed_at
                       WHEN 'cancelled' THEN v.cancelled_at END,
                   h.seen_at) < valid_cutoff()
    GROUP BY h.id
), later AS (
    SELECT reconcile_cutoff() > valid_cutoff() AS after_d
)
SELECT r.* REPLACE (
    coalesce(l.status_then, h.status_then, r.status) AS status,
    CASE WHEN later.after_d AND r.executed_at >= valid_cutoff() THEN NULL
         ELSE r.executed_at END AS executed_at,
    CASE WHEN later.after_d AND r.cancelled_at >= valid_cutoff() THEN NULL
         ELSE r.cancelled_at END AS cancelled_at)
FROM versions r
CROSS JOIN later
LEFT JOIN hist h ON h.id = r.id
LEFT JOIN learned l ON l.id = r.id
WHERE coalesce(h.first_seen, r.last_seen_at) < seen_cutoff()
   OR (coalesce(h.first_seen, r.last_seen_at) < reconcile_cutoff()
       AND r.created_at < valid_cutoff());

-- Every service payment (as the books knew it by the as-of date) with its distribution and the
-- date it pays (override, else the distribution's date) as a calendar date in the distribution's
-- timezone; the distribution's local date is computed once per distribution, not per payment.
CREATE VIEW payments_effective AS
WITH d AS (
    SELECT
        id, vehicle, name, external_reference, status, distribution_date,
        coalesce(distribution_timezone, 'UTC') AS tz,
        CAST(timezone(coalesce(distribution_timezone, 'UTC'), distribution_date) AS DATE)
            AS local_date
    FROM as_of_distributions
)
SELECT
    p.*,
    d.vehicle,
    d.name AS distribution_name,
    d.external_reference AS distribution_external_reference,
    d.status AS distribution_status,
    coalesce(p.distribution_date_override, d.distribution_date) AS effective_at,
    CASE
        WHEN p.distribution_date_override IS NULL THEN d.local_date
        ELSE CAST(timezone(coalesce(d.tz, 'UTC'), p.distribution_date_override) AS DATE)
    END AS effective_date
FROM as_of_distribution_payments p
LEFT JOIN d ON d.id = p.distribution;

CREATE VIEW as_of_vehicles AS
SELECT v.*
FROM vehicles v
LEFT JOIN object_first_seen f ON f.object = 'vehicle' AND f.id = v.id
WHERE coalesce(f.seen_at, v.last_seen_at) < reconcile_cutoff();

-- funding: per vehicle, depository `available` (NULL: no balance seen by the as-of date — "no
-- balance yet", never $0 and never a shortfall) against what is owed: staged payments (not yet
-- disbursed, failed or cancelled: `obligations_cents`, accumulated by payment date) plus failed
-- payments not yet cancelled or paid again (`failed_owed_cents`: a failed payment is paid again
-- when the same investor has a later, not failed or cancelled payment of the same amount from
-- the same vehicle). Staged payments past their payment date are past due.
CREATE VIEW funding AS
WITH dep AS (
    SELECT vehicle,
           CAST(sum(available_cents) AS BIGINT) AS available_cents,
           CAST(sum(total_cents) AS BIGINT) AS total_cents,
           max(seen_at) AS balance_seen_at
    FROM balances_as_of
    WHERE type = 'depository'
    GROUP BY vehicle
), staged AS (
    SELECT vehicle, entity, id, amount_cents, effective_date, 'staged' AS owed_as
    FROM payments_effective
    WHERE status NOT IN ('disbursed', 'failed', 'cancelled')
), failed_owed AS (
    SELECT f.vehicle, f.entity, f.id, f.amount_cents, f.effective_date, 'failed' AS owed_as
    FROM payments_effective f
    WHERE f.status = 'failed'
      AND coalesce(f.distribution_status, '') <> 'cancelled'
      AND NOT EXISTS (
          SELECT 1 FROM payments_effective g
          WHERE g.vehicle = f.vehicle AND g.entity = f.entity AND g.id <> f.id
            AND g.amount_cents = f.amount_cents
            AND g.status NOT IN ('failed', 'cancelled')
            AND g.effective_date >= f.effective_date)
), owed AS (
    SELECT * FROM staged UNION ALL SELECT * FROM failed_owed
), by_date AS (
    SELECT vehicle, effective_date, CAST(sum(amount_cents) AS BIGINT) AS cents
    FROM owed
    GROUP BY vehicle, effective_date
), cumulative AS (
    SELECT b.vehicle, b.effective_date,
           CAST(sum(b.cents) OVER (PARTITION BY b.vehicle ORDER BY b.effective_date
                              ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS BIGINT)
               AS cumulative_cents
    FROM by_date b
), per_vehicle AS (
    SELECT vehicle,
           CAST(count(*) FILTER (WHERE owed_as = 'staged') AS BIGINT) AS open_payments,
           CAST(coalesce(sum(amount_cents) FILTER (WHERE owed_as = 'staged'), 0) AS BIGINT)
               AS obligations_cents,
           CAST(coalesce(sum(amount_cents) FILTER (WHERE owed_as = 'staged'
                                                   AND effective_date <= reconcile_as_of()), 0)
                AS BIGINT) AS obligations_due_cents,
           min(effective_date) FILTER (WHERE owed_as = 'staged') AS next_distribution_date,
           CAST(count(*) FILTER (WHERE owed_as = 'failed') AS BIGINT) AS failed_owed_payments,
           CAST(coalesce(sum(amount_cents) FILTER (WHERE owed_as = 'failed'), 0) AS BIGINT)
               AS failed_owed_cents,
           CAST(count(*) FILTER (WHERE owed_as = 'staged' AND effective_date < reconcile_as_of())
                AS BIGINT) AS past_due_payments,
           CAST(coalesce(sum(amount_cents) FILTER (WHERE owed_as = 'staged'
                                                   AND effective_date < reconcile_as_of()), 0)
                AS BIGINT) AS past_due_cents,
           CAST(reconcile_as_of() - min(effective_date) FILTER (
                    WHERE owed_as = 'staged' AND effective_date < reconcile_as_of()) AS BIGINT)
               AS days_past_due
    FROM owed
    GROUP BY vehicle
), short AS (
    SELECT c.vehicle, min(c.effective_date) AS first_short_date
    FROM cumulative c JOIN dep ON dep.vehicle = c.vehicle
    WHERE c.cumulative_cents > dep.available_cents
    GROUP BY c.vehicle
), ids AS (
    SELECT id AS vehicle FROM as_of_vehicles
    UNION SELECT vehicle FROM dep
    UNION SELECT vehicle FROM per_vehicle
)
SELECT
    ids.vehicle,
    v.name AS vehicle_name,
    dep.available_cents,
    dep.total_cents,
    coalesce(o.open_payments, 0) AS open_payments,
    coalesce(o.obligations_cents, 0) AS obligations_cents,
    coalesce(o.obligations_due_cents, 0) AS obligations_due_cents,
    o.next_distribution_date,
    s.first_short_date,
    CASE WHEN dep.vehicle IS NOT NULL
         THEN greatest(coalesce(o.obligations_cents, 0) + coalesce(o.failed_owed_cents, 0)
                       - dep.available_cents, 0) END AS shortfall_cents,
    dep.balance_seen_at,
    CASE WHEN dep.vehicle IS NULL THEN 'no balance yet' ELSE 'seen' END AS balance,
    coalesce(o.failed_owed_payments, 0) AS failed_owed_payments,
    coalesce(o.failed_owed_cents, 0) AS failed_owed_cents,
    coalesce(o.obligations_cents, 0) + coalesce(o.failed_owed_cents, 0) AS owed_cents,
    coalesce(o.past_due_payments, 0) AS past_due_payments,
    coalesce(o.past_due_cents, 0) AS past_due_cents,
    o.days_past_due
FROM ids
LEFT JOIN vehicles v ON v.id = ids.vehicle
LEFT JOIN dep ON dep.vehicle = ids.vehicle
LEFT JOIN per_vehicle o ON o.vehicle = ids.vehicle
LEFT JOIN short s ON s.vehicle = ids.vehicle;

-- A service payment appears once however many sheet rows point at it (the original file and any
-- re-saved copy): the earliest row stands for it and `sheet_rows` counts them. Sheet rows that
-- never reached the service (state planned, conflict or failed, with no payment id: the file was
-- rejected, refused, in conflict or superseded) belong to their file's outcome, not here.
-- Where a sheet is now, relative to the data directory: the ledger remembers the name it was
-- dropped under (or its path in processing/); a finished file was moved to processed/ or rejected/.
CREATE MACRO file_now(source_file, state) AS
    CASE state
        WHEN 'processed' THEN 'processed/'
        WHEN 'rejected' THEN 'rejected/'
        WHEN 'conflict' THEN 'rejected/'
        WHEN 'processing' THEN 'processing/'
        ELSE ''
    END || regexp_extract(source_file, '[^/\\]+$');

-- A sheet counts from the sync that first copied its file (as before); one first copied after
-- D counts in a report of D only when its distributions existed at the service by then (a
-- file dropped on the 1st for the new month is not in the closed report of the month before).
CREATE VIEW sheet_files_existing AS
WITH late AS (
    SELECT file_hash FROM file_sightings GROUP BY file_hash
    HAVING min(seen_at) >= seen_cutoff() AND min(seen_at) < reconcile_cutoff()
)
SELECT l.file_hash
FROM late
JOIN ledger_payments l ON l.file_hash = late.file_hash
JOIN distributions d ON d.id = l.distribution_id
GROUP BY l.file_hash
HAVING max(d.created_at) < valid_cutoff();

CREATE VIEW as_of_ledger_files AS
WITH seen AS (
    SELECT file_hash, min(seen_at) AS first_seen,
           arg_max(state, seen_at) FILTER (WHERE seen_at < reconcile_cutoff()) AS state_then
    FROM file_sightings
    GROUP BY file_hash
)
SELECT f.* REPLACE (coalesce(s.state_then, f.state) AS state)
FROM ledger_files f
LEFT JOIN seen s ON s.file_hash = f.file_hash
WHERE coalesce(s.first_seen, f.received_at, TIMESTAMPTZ '1970-01-01 00:00:00+00')
      < seen_cutoff()
UNION ALL
SELECT f.* REPLACE (coalesce(s.state_then, f.state) AS state)
FROM ledger_files f
JOIN sheet_files_existing x ON x.file_hash = f.file_hash
LEFT JOIN seen s ON s.file_hash = f.file_hash;

CREATE VIEW as_of_ledger_payments AS
WITH seen AS (
    SELECT file_hash, min(seen_at) AS first_seen FROM file_sightings GROUP BY file_hash
)
SELECT l.*
FROM ledger_payments l
LEFT JOIN seen s ON s.file_hash = l.file_hash
LEFT JOIN ledger_files f ON f.file_hash = l.file_hash
WHERE coalesce(s.first_seen, f.received_at, l.updated_at, TIMESTAMPTZ '1970-01-01 00:00:00+00')
      < seen_cutoff()
UNION ALL
SELECT l.*
FROM ledger_payments l
JOIN sheet_files_existing x ON x.file_hash = l.file_hash;

-- sheet vs service: every ledger row against the service's payment, and every service payment
-- no ledger row points to (match: ok | missing | extra | amount_mismatch | status_mismatch), over
-- the point-in-time ledger and payments.
CREATE VIEW sheet_vs_service AS
WITH reached AS (
    SELECT l.*, count(*) OVER (PARTITION BY l.payment_id) AS copies
    FROM as_of_ledger_payments l
    WHERE l.payment_id IS NOT NULL
    QUALIFY row_number() OVER (
        PARTITION BY l.payment_id ORDER BY l.updated_at, l.file_hash, l."row") = 1
    UNION ALL
    SELECT l.*, 1 AS copies
    FROM as_of_ledger_payments l
    WHERE l.payment_id IS NULL AND l.state IN ('sent', 'created', 'linked')
), joined AS (
    SELECT
        l.file_hash, l.source_file, file_now(l.source_file, f.state) AS file_location,
        l.sheet, l."row",
        l.copies,
        l.state AS ledger_state,
        l.amount_cents AS sheet_amount_cents,
        l.payment_id AS ledger_payment_id,
        l.distribution_id AS ledger_distribution_id,
        l.distribution_external_reference AS ledger_external_reference,
        l.distribution_name AS ledger_distribution_name,
        l.vehicle AS ledger_vehicle,
        l.entity AS ledger_entity,
        s.id AS service_payment_id,
        s.distribution AS service_distribution_id,
        s.distribution_external_reference AS service_external_reference,
        s.distribution_name AS service_distribution_name,
        s.vehicle AS service_vehicle,
        s.entity AS service_entity,
        s.amount_cents AS service_amount_cents,
        s.status AS service_status,
        s.effective_date,
        s.disbursed_at,
        s.failure_reason,
        (l.file_hash IS NOT NULL OR l.source_file IS NOT NULL OR l.state IS NOT NULL) AS in_ledger
    FROM reached l
    LEFT JOIN as_of_ledger_files f ON f.file_hash = l.file_hash
    FULL OUTER JOIN payments_effective s ON s.id = l.payment_id
), classified AS (
    SELECT *,
        CASE
            WHEN NOT in_ledger THEN 'extra'
            WHEN service_payment_id IS NULL THEN 'missing'
            WHEN sheet_amount_cents IS DISTINCT FROM service_amount_cents THEN 'amount_mismatch'
            WHEN ledger_state NOT IN ('created', 'linked')
                 OR service_status IN ('failed', 'cancelled') THEN 'status_mismatch'
            ELSE 'ok'
        END AS match
    FROM joined
)
SELECT
    match,
    CASE match
        WHEN 'extra' THEN 'service payment of ' || usd(service_amount_cents)
            || ' (' || coalesce(service_status, '?') || ') is in no sheet'
        WHEN 'missing' THEN 'sheet row of ' || usd(sheet_amount_cents) || ' (ledger '
            || coalesce(ledger_state, '?') || ') has no payment at the service'
            || CASE WHEN ledger_payment_id IS NOT NULL THEN ' (' || ledger_payment_id || ' not found)'
                    ELSE '' END
        WHEN 'amount_mismatch' THEN 'sheet ' || usd(sheet_amount_cents) || ' vs service '
            || usd(service_amount_cents)
        WHEN 'status_mismatch' THEN 'ledger ' || coalesce(ledger_state, '?') || ' vs service '
            || coalesce(service_status, '?')
            || coalesce(' (' || failure_reason || ')', '')
        ELSE ''
    END AS reason,
    coalesce(service_vehicle, ledger_vehicle) AS vehicle,
    coalesce(service_distribution_id, ledger_distribution_id) AS distribution_id,
    coalesce(ledger_external_reference, service_external_reference) AS distribution_external_reference,
    coalesce(ledger_distribution_name, service_distribution_name) AS distribution_name,
    coalesce(service_payment_id, ledger_payment_id) AS payment_id,
    coalesce(service_entity, ledger_entity) AS entity,
    inv.name AS investor_name,
    sheet_amount_cents,
    service_amount_cents,
    service_amount_cents - sheet_amount_cents AS difference_cents,
    ledger_state,
    service_status,
    effective_date,
    disbursed_at,
    failure_reason,
    source_file,
    sheet,
    "row",
    file_hash,
    coalesce(copies, 0) AS sheet_rows,
    file_location
FROM classified
LEFT JOIN entities inv ON inv.id = coalesce(service_entity, ledger_entity);

-- `disbursed_at`, `failed_at` and `failure_reason` are ours (neither the interface nor the public
-- material has them): they enrich, they never decide. A disbursed payment without
-- `disbursed_at` counts at its effective date; a failed payment without `failure_reason` is
-- still an exception, and says the reason was not given.
CREATE VIEW balance_movement AS
WITH debited AS (
    SELECT b.financial_account, b.vehicle, b.seen_at
    FROM balances_as_of b
    LEFT JOIN financial_accounts fa ON fa.id = b.financial_account
    WHERE b.type = 'depository'
    QUALIFY row_number() OVER (PARTITION BY b.vehicle ORDER BY fa.created_at, b.financial_account) = 1
), disbursed AS (
    SELECT d.financial_account, CAST(sum(p.amount_cents) AS BIGINT) AS cents, count(*) AS payments
    FROM debited d
    JOIN payments_effective p
      ON p.vehicle = d.vehicle
     AND p.status = 'disbursed'
     AND coalesce(p.disbursed_at, p.effective_at)
         >= timezone('UTC', date_trunc('month', timezone('UTC', d.seen_at)))
     AND coalesce(p.disbursed_at, p.effective_at) <= d.seen_at
    GROUP BY d.financial_account
)
SELECT
    b.financial_account,
    fa.name AS account_name,
    b.vehicle,
    v.name AS vehicle_name,
    b.type,
    b.seen_at AS balance_seen_at,
    b.total_end_of_last_month_cents,
    coalesce(d.cents, 0) AS disbursed_this_month_cents,
    coalesce(d.payments, 0) AS disbursed_payments,
    b.total_end_of_last_month_cents - coalesce(d.cents, 0) AS expected_total_cents,
    b.total_cents,
    b.available_cents,
    b.total_cents - (b.total_end_of_last_month_cents - coalesce(d.cents, 0)) AS unexplained_cents
FROM balances_as_of b
LEFT JOIN financial_accounts fa ON fa.id = b.financial_account
LEFT JOIN vehicles v ON v.id = b.vehicle
LEFT JOIN disbursed d ON d.financial_account = b.financial_account;

CREATE VIEW superseded_files AS
SELECT DISTINCT f.file_hash
FROM as_of_ledger_files f
JOIN as_of_ledger_files g
  ON g.state = 'processed' AND g.file_hash <> f.file_hash
WHERE f.state IN ('rejected', 'conflict')
  AND ((g.received_at >= f.received_at
        AND (g.source_file = f.source_file
             OR EXISTS (SELECT 1 FROM as_of_ledger_payments lf JOIN as_of_ledger_payments lg
                          ON lg.distribution_external_reference = lf.distribution_external_reference
                         WHERE lf.file_hash = f.file_hash AND lg.file_hash = g.file_hash)))
       -- every distribution a rejected file names is carried by a processed file, whichever
       -- came first: nothing of it is lost, whatever order the files were read in
       OR (f.state = 'rejected'
           AND EXISTS (SELECT 1 FROM ledger_file_distributions r WHERE r.file_hash = f.file_hash)
           AND NOT EXISTS (
               SELECT 1 FROM ledger_file_distributions r
               WHERE r.file_hash = f.file_hash
                 AND r.distribution_external_reference NOT IN (
                     SELECT lg.distribution_external_reference FROM as_of_ledger_payments lg
                     WHERE lg.file_hash = g.file_hash
                       AND lg.distribution_external_reference IS NOT NULL))));

-- A conflicting file's rows beside the service's payments of the same distribution.
CREATE VIEW conflict_rows AS
SELECT l.file_hash, l."row", l.distribution_external_reference, l.entity,
       l.amount_cents AS sheet_amount_cents, s.amount_cents AS service_amount_cents,
       s.sender_url
FROM as_of_ledger_payments l
LEFT JOIN (
    SELECT p.entity, p.amount_cents, d.external_reference, d.sender_url
    FROM as_of_distribution_payments p JOIN as_of_distributions d ON d.id = p.distribution
) s ON s.external_reference = l.distribution_external_reference AND s.entity = l.entity
WHERE l.state = 'conflict';

-- The bottom layer of `exceptions`: what needs a person in the funding, the sheets, the
-- depository balances and the files (not the superseded ones), with a stable id (same problem,
-- same id on every run), the amount at stake, the distribution and investor in words, and what
-- to do; a shortfall names the failed payments still owed.
CREATE VIEW exceptions_before_011 AS
WITH raw AS (
    SELECT 'shortfall' AS kind, vehicle, 'vehicle' AS object_type, vehicle AS object_id,
           NULL::VARCHAR AS source_file, NULL::VARCHAR AS sheet, NULL::INTEGER AS "row",
           shortfall_cents AS amount_cents,
           'depository available ' || usd(available_cents) || ' is short of open obligations '
               || usd(obligations_cents)
               || CASE WHEN failed_owed_cents > 0 THEN ' and failed payments still owed '
                       || usd(failed_owed_cents) ELSE '' END
               || ' by ' || usd(shortfall_cents)
               || coalesce(' from ' || CAST(first_short_date AS VARCHAR), '') AS reason,
           NULL::VARCHAR AS distribution_name, NULL::VARCHAR AS distribution_external_reference,
           NULL::VARCHAR AS entity, NULL::VARCHAR AS file_hash, NULL::VARCHAR AS file_location,
           'fund the depository account of ' || coalesce(vehicle_name, vehicle) || ' with '
               || usd(shortfall_cents) || ' before ' || coalesce(CAST(first_short_date AS VARCHAR), 'the next distribution')
               || ', or move the distribution''s date' AS action
    FROM funding
    WHERE shortfall_cents > 0
    UNION ALL
    SELECT match, vehicle, 'distribution_payment', payment_id, source_file, sheet, "row",
           CASE WHEN match = 'amount_mismatch' THEN difference_cents
                ELSE coalesce(service_amount_cents, sheet_amount_cents) END,
           CASE WHEN service_status = 'failed' AND failure_reason IS NULL
                THEN reason || ' (reason not given by the service)' ELSE reason END,
           distribution_name, distribution_external_reference, entity, file_hash,
           file_location,
           CASE match
               WHEN 'extra' THEN 'find the sheet this payment came from, or cancel it at the service'
               WHEN 'missing' THEN 'check the service for this payment; drop the sheet again if it never arrived'
               WHEN 'amount_mismatch' THEN 'agree the amount with the investor team, then correct the sheet or the service'
               ELSE CASE WHEN service_status = 'failed' AND failure_reason ILIKE '%insufficient%'
                              THEN 'fund the vehicle''s depository account, then pay the investor again'
                         WHEN service_status = 'failed' THEN 'fix the investor''s payment instructions and pay again'
                         WHEN service_status = 'cancelled' THEN 'confirm the cancellation was intended; remove the row from the sheet'
                         ELSE 'check the payment''s status at the service' END
           END
    FROM sheet_vs_service
    WHERE match <> 'ok'
    UNION ALL
    SELECT 'unexplained_balance', vehicle, 'financial_account', financial_account, NULL, NULL, NULL,
           unexplained_cents,
           'total ' || usd(total_cents) || ' vs end of last month ' || usd(total_end_of_last_month_cents)
               || ' less ' || usd(disbursed_this_month_cents) || ' disbursed leaves '
               || usd(unexplained_cents) || ' unexplained',
           NULL, NULL, NULL, NULL, NULL,
           'find the movement on the bank statement of ' || coalesce(account_name, financial_account)
    FROM balance_movement
    WHERE unexplained_cents <> 0 AND type = 'depository'
    UNION ALL
    SELECT 'file_' || f.state, NULL, 'ledger_file', f.file_hash, f.source_file, NULL, NULL,
           f.total_cents,
           CASE f.state
               WHEN 'rejected' THEN 'file ' || file_now(f.source_file, f.state) || ' (' || coalesce(CAST(f."rows" AS VARCHAR), '?')
                   || ' row(s)' || CASE WHEN f.total_cents IS NULL THEN '' ELSE ', ' || usd(f.total_cents) END
                   || ') was rejected on '
                   || CAST(CAST(timezone('UTC', f.received_at) AS DATE) AS VARCHAR)
                   || ': nothing in it was paid'
               ELSE 'file ' || file_now(f.source_file, f.state) || ' changes distributions already at the service: '
                   || coalesce((SELECT string_agg(coalesce(e.name, c.entity) || ' (' || c.entity || ') row '
                                   || c."row" || ': sheet ' || usd(c.sheet_amount_cents) || ' vs service '
                                   || coalesce(usd(c.service_amount_cents), 'none'), '; ' ORDER BY c."row")
                                FROM conflict_rows c LEFT JOIN entities e ON e.id = c.entity
                                WHERE c.file_hash = f.file_hash
                                  AND c.sheet_amount_cents IS DISTINCT FROM c.service_amount_cents), 'no row differs')
                   || coalesce(' — change it at ' || (SELECT min(c.sender_url) FROM conflict_rows c
                                                      WHERE c.file_hash = f.file_hash), '')
           END,
           (SELECT min(l.distribution_name) FROM as_of_ledger_payments l WHERE l.file_hash = f.file_hash),
           (SELECT min(l.distribution_external_reference) FROM as_of_ledger_payments l WHERE l.file_hash = f.file_hash),
           NULL, f.file_hash, file_now(f.source_file, f.state),
           CASE f.state
               WHEN 'rejected' THEN 'open its error report beside it in rejected/, fix the sheet and drop it in the inbox again'
               ELSE 'make the change at the service (or restore the sheet), then drop the file again'
           END
    FROM as_of_ledger_files f
    WHERE f.state IN ('rejected', 'conflict')
      AND f.file_hash NOT IN (SELECT file_hash FROM superseded_files)
)
SELECT
    r.kind, r.vehicle, r.object_type, r.object_id, r.source_file, r.sheet, r."row",
    r.amount_cents, r.reason,
    'EX-' || upper(left(md5(r.kind || '|' || r.object_type || '|' || CASE
        WHEN r.object_id IS NOT NULL THEN r.object_id
        ELSE coalesce(r.file_hash, '') || ':' || coalesce(CAST(r."row" AS VARCHAR), '') END), 10))
        AS exception_id,
    v.name AS vehicle_name,
    r.distribution_name, r.distribution_external_reference,
    r.entity, e.name AS investor_name, e.external_reference AS investor_reference,
    r.action,
    r.file_location,
    -- the whole problem in one plain line: whose money, how much, where in which sheet
    CASE
        WHEN r.object_type = 'distribution_payment' THEN
            coalesce(r.distribution_name, '?') || coalesce(' (' || r.distribution_external_reference || ')', '')
            || ', ' || coalesce(e.name, r.entity, 'unknown investor')
            || coalesce(' (' || e.external_reference || ')', '') || coalesce(' [' || r.entity || ']', '')
            || ': ' || r.reason
            || coalesce('; ' || coalesce(r.file_location, r.source_file)
                        || coalesce(' row ' || CAST(r."row" AS VARCHAR), ''), '')
        WHEN r.object_type IN ('vehicle', 'financial_account') THEN
            coalesce(v.name || ' (' || r.vehicle || ')', r.vehicle, '?') || ': ' || r.reason
        ELSE r.reason
            || coalesce('; distribution ' || r.distribution_name
                        || coalesce(' (' || r.distribution_external_reference || ')', ''), '')
    END AS what
FROM raw r
LEFT JOIN vehicles v ON v.id = r.vehicle
LEFT JOIN entities e ON e.id = r.entity;

-- `exception_states_of(cutoff, ids)`: the same fold for the exceptions `ids` only (a page of
-- them: the events of other exceptions are never read), every one when `ids` is NULL.
CREATE MACRO exception_states_of(cutoff, ids) AS TABLE
WITH e AS (
    SELECT * FROM exception_events
    WHERE event_at < cutoff AND (ids IS NULL OR list_contains(ids, exception_id))
)
SELECT
    exception_id AS id,
    arg_max(CASE event WHEN 'acknowledged' THEN 'acknowledged' WHEN 'resolved' THEN 'resolved'
                       ELSE 'open' END, seq)
        FILTER (WHERE event IN ('opened', 'reopened', 'acknowledged', 'resolved')) AS state,
    min(as_of) FILTER (WHERE event = 'opened') AS first_seen,
    -- the reconciliation's own events: a person's (acknowledged, assigned, commented) is no sighting
    max(as_of) FILTER (WHERE event IN ('opened', 'amount_changed', 'reopened', 'resolved'))
        AS last_event_on,
    arg_max(as_of, seq) FILTER (WHERE event = 'resolved') AS resolved_on,
    arg_max(assignee, seq) FILTER (WHERE event = 'assigned') AS owner,
    arg_max(by_name, seq) FILTER (WHERE event = 'acknowledged') AS acknowledged_by,
    arg_max(event_at, seq) FILTER (WHERE event = 'acknowledged') AS acknowledged_at,
    arg_max(note, seq) FILTER (WHERE event = 'acknowledged') AS note,
    arg_max(amount_cents, seq) FILTER (WHERE event = 'acknowledged') AS acknowledged_amount_cents,
    arg_max(amount_cents, seq) FILTER (WHERE event IN ('opened', 'reopened', 'amount_changed'))
        AS amount_cents,
    arg_max(kind, seq) FILTER (WHERE kind IS NOT NULL) AS kind,
    arg_max(object_type, seq) FILTER (WHERE kind IS NOT NULL) AS object_type,
    arg_max(object_id, seq) FILTER (WHERE kind IS NOT NULL) AS object_id,
    arg_max(vehicle, seq) FILTER (WHERE kind IS NOT NULL) AS vehicle,
    arg_max(source_file, seq) FILTER (WHERE kind IS NOT NULL) AS source_file,
    arg_max("row", seq) FILTER (WHERE kind IS NOT NULL) AS "row",
    arg_max(what, seq) FILTER (WHERE kind IS NOT NULL) AS what,
    arg_max(action, seq) FILTER (WHERE kind IS NOT NULL) AS action
FROM e
GROUP BY exception_id;

CREATE MACRO exception_states(cutoff) AS TABLE
SELECT * FROM exception_states_of(cutoff, CAST(NULL AS VARCHAR[]));

-- The months closed as known at the knowledge time: the last close or reopening is a close.
-- `cutoff` is that close's knowledge time (what its report read).
CREATE VIEW closed_periods AS
WITH e AS (
    SELECT * FROM period_events
    WHERE event IN ('closed', 'reopened') AND event_at < reconcile_cutoff()
)
SELECT period,
       CAST(period || '-01' AS DATE) AS first_day,
       arg_max(as_of, seq) AS last_day,
       arg_max(cutoff, seq) AS cutoff,
       arg_max(event_at, seq) AS closed_at
FROM e
GROUP BY period
HAVING arg_max(event, seq) = 'closed';

-- after-close adjustments: a payment dated in a closed month whose amount or status, as known
-- now, differs from what the closed report showed, the change being learned in the as-of's
-- month (so it is listed in the reports of the month it was learned in, once).
CREATE VIEW after_close_adjustments AS
WITH win AS (
    SELECT timezone(reporting_timezone(),
                    CAST(date_trunc('month', reconcile_as_of()) AS TIMESTAMP)) AS learned_from,
           reconcile_cutoff() AS learned_before
), learned AS (
    SELECT h.id, max(h.replaced_at) AS learned_at
    FROM distribution_payment_history h, win
    WHERE h.replaced_at >= win.learned_from AND h.replaced_at < win.learned_before
    GROUP BY h.id
    UNION ALL
    SELECT s.id, min(s.seen_at)
    FROM status_history s, win
    WHERE s.object = 'distribution_payment' AND s.previous_status IS NULL
      AND s.seen_at >= win.learned_from AND s.seen_at < win.learned_before
    GROUP BY s.id
), candidates AS (
    SELECT p.*, c.period, c.cutoff AS closed_cutoff, l.learned_at
    FROM payments_effective p
    JOIN (SELECT id, max(learned_at) AS learned_at FROM learned GROUP BY id) l ON l.id = p.id
    JOIN closed_periods c ON p.effective_date BETWEEN c.first_day AND c.last_day
), closed_version AS (
    -- the payment as the closed report read it: the row a later change replaced, else now's
    SELECT c.id,
           arg_min(h.amount_cents, h.replaced_at) AS amount_cents,
           arg_min(h.status, h.replaced_at) AS status
    FROM candidates c
    JOIN distribution_payment_history h ON h.id = c.id AND h.replaced_at >= c.closed_cutoff
    GROUP BY c.id
), first_seen AS (
    SELECT id, min(seen_at) AS first_seen
    FROM status_history WHERE object = 'distribution_payment' GROUP BY id
)
SELECT
    c.period,
    c.id AS payment_id,
    c.vehicle,
    c.distribution AS distribution_id,
    c.distribution_name,
    c.distribution_external_reference,
    c.entity,
    c.effective_date,
    CASE WHEN f.first_seen >= c.closed_cutoff THEN NULL
         ELSE coalesce(v.amount_cents, c.amount_cents) END AS closed_amount_cents,
    CASE WHEN f.first_seen >= c.closed_cutoff THEN NULL
         ELSE coalesce(v.status, c.status) END AS closed_status,
    c.amount_cents,
    c.status,
    c.amount_cents - CASE WHEN f.first_seen >= c.closed_cutoff THEN 0
                          ELSE coalesce(v.amount_cents, c.amount_cents) END AS change_cents,
    c.learned_at,
    CAST(timezone(reporting_timezone(), c.learned_at) AS DATE) AS learned_on
FROM candidates c
LEFT JOIN closed_version v ON v.id = c.id
LEFT JOIN first_seen f ON f.id = c.id
WHERE f.first_seen >= c.closed_cutoff
   OR (coalesce(v.amount_cents, c.amount_cents), coalesce(v.status, c.status))
      IS DISTINCT FROM (c.amount_cents, c.status);

CREATE VIEW exceptions_before_020 AS
SELECT * FROM exceptions_before_011
UNION ALL BY NAME
SELECT
    'after_close_adjustment' AS kind,
    a.vehicle,
    'distribution_payment' AS object_type,
    a.payment_id AS object_id,
    NULL::VARCHAR AS source_file,
    NULL::VARCHAR AS sheet,
    NULL::INTEGER AS "row",
    a.change_cents AS amount_cents,
    'payment of ' || CAST(a.effective_date AS VARCHAR) || ' in closed period ' || a.period
        || ' changed after the close: '
        || CASE WHEN a.closed_status IS NULL THEN 'new payment of ' || usd(a.amount_cents)
                                                  || ' (' || coalesce(a.status, '?') || ')'
                ELSE usd(a.closed_amount_cents) || ' ' || coalesce(a.closed_status, '?')
                     || ' → ' || usd(a.amount_cents) || ' ' || coalesce(a.status, '?') END
        || '; learned ' || CAST(a.learned_on AS VARCHAR) AS reason,
    'EX-' || upper(left(md5('after_close_adjustment|distribution_payment|' || a.payment_id), 10))
        AS exception_id,
    v.name AS vehicle_name,
    a.distribution_name,
    a.distribution_external_reference,
    a.entity,
    e.name AS investor_name,
    e.external_reference AS investor_reference,
    'record the adjustment in ' || strftime(reconcile_as_of(), '%Y-%m')
        || ' (the closed report of ' || a.period || ' stays as filed)' AS action,
    NULL::VARCHAR AS file_location,
    coalesce(a.distribution_name, '?') || coalesce(' (' || a.distribution_external_reference || ')', '')
        || ', ' || coalesce(e.name, a.entity, 'unknown investor')
        || ': after-close adjustment to ' || a.period || ': '
        || CASE WHEN a.closed_status IS NULL THEN 'new payment of ' || usd(a.amount_cents)
                ELSE usd(a.closed_amount_cents) || ' ' || coalesce(a.closed_status, '?')
                     || ' → ' || usd(a.amount_cents) || ' ' || coalesce(a.status, '?') END
        || ', learned ' || CAST(a.learned_on AS VARCHAR) AS what
FROM after_close_adjustments a
LEFT JOIN vehicles v ON v.id = a.vehicle
LEFT JOIN entities e ON e.id = a.entity;

-- Per distribution: sheet $ = service $ = disbursed + failed + cancelled + outstanding, in payment
-- counts and dollars, with the days an outstanding (staged) payment is past its payment date; a
-- last row `Total` that foots (the sum of the rows) and cross-foots (disbursed + failed +
-- cancelled + outstanding = service). Built on `sheet_vs_service` (one row per service payment,
-- plus the sheet rows the service does not have), so it reads the books as of the same date.
-- A distribution that does not tie is an exception (`distribution_tie_out`).
CREATE VIEW distribution_tieout AS
WITH lines AS (
    SELECT
        coalesce(distribution_id, 'ref:' || coalesce(distribution_external_reference, '?')) AS key,
        distribution_id, distribution_name, distribution_external_reference, vehicle, match,
        CASE WHEN match <> 'extra' THEN sheet_amount_cents END AS sheet_cents,
        CASE WHEN match <> 'missing' THEN service_amount_cents END AS service_cents,
        CASE WHEN match <> 'missing' THEN service_status END AS status,
        effective_date
    FROM sheet_vs_service
), per AS (
    SELECT
        key,
        max(distribution_id) AS distribution_id,
        max(distribution_name) AS distribution_name,
        max(distribution_external_reference) AS distribution_external_reference,
        max(vehicle) AS vehicle,
        min(effective_date) AS payment_date,
        count(*) FILTER (WHERE match <> 'extra') AS sheet_payments,
        CAST(coalesce(sum(sheet_cents), 0) AS BIGINT) AS sheet_cents,
        count(*) FILTER (WHERE match <> 'missing') AS service_payments,
        CAST(coalesce(sum(service_cents), 0) AS BIGINT) AS service_cents,
        count(*) FILTER (WHERE status = 'disbursed') AS disbursed_payments,
        CAST(coalesce(sum(service_cents) FILTER (WHERE status = 'disbursed'), 0) AS BIGINT)
            AS disbursed_cents,
        count(*) FILTER (WHERE status = 'failed') AS failed_payments,
        CAST(coalesce(sum(service_cents) FILTER (WHERE status = 'failed'), 0) AS BIGINT)
            AS failed_cents,
        count(*) FILTER (WHERE status = 'cancelled') AS cancelled_payments,
        CAST(coalesce(sum(service_cents) FILTER (WHERE status = 'cancelled'), 0) AS BIGINT)
            AS cancelled_cents,
        count(*) FILTER (WHERE status NOT IN ('disbursed', 'failed', 'cancelled')) AS outstanding_payments,
        CAST(coalesce(sum(service_cents) FILTER (
            WHERE status NOT IN ('disbursed', 'failed', 'cancelled')), 0) AS BIGINT) AS outstanding_cents,
        min(effective_date) FILTER (WHERE status NOT IN ('disbursed', 'failed', 'cancelled'))
            AS outstanding_since
    FROM lines
    GROUP BY key
), rows AS (
    SELECT per.*,
        CAST(greatest(reconcile_as_of() - outstanding_since, 0) AS BIGINT) AS days_past_due,
        service_cents - sheet_cents AS difference_cents,
        service_payments - sheet_payments AS difference_payments,
        (sheet_payments = service_payments AND sheet_cents = service_cents
         AND service_cents = disbursed_cents + failed_cents + cancelled_cents + outstanding_cents)
            AS ties
    FROM per
)
SELECT
    false AS is_total, r.distribution_name, r.distribution_external_reference, r.vehicle,
    v.name AS vehicle_name, r.payment_date,
    r.sheet_payments, r.sheet_cents, r.service_payments, r.service_cents,
    r.disbursed_payments, r.disbursed_cents, r.failed_payments, r.failed_cents,
    r.cancelled_payments, r.cancelled_cents, r.outstanding_payments, r.outstanding_cents,
    r.days_past_due, r.difference_payments, r.difference_cents, r.ties, r.distribution_id
FROM rows r
LEFT JOIN vehicles v ON v.id = r.vehicle
UNION ALL
SELECT
    true, 'Total', NULL, NULL, NULL, NULL,
    CAST(coalesce(sum(sheet_payments), 0) AS BIGINT), CAST(coalesce(sum(sheet_cents), 0) AS BIGINT),
    CAST(coalesce(sum(service_payments), 0) AS BIGINT), CAST(coalesce(sum(service_cents), 0) AS BIGINT),
    CAST(coalesce(sum(disbursed_payments), 0) AS BIGINT), CAST(coalesce(sum(disbursed_cents), 0) AS BIGINT),
    CAST(coalesce(sum(failed_payments), 0) AS BIGINT), CAST(coalesce(sum(failed_cents), 0) AS BIGINT),
    CAST(coalesce(sum(cancelled_payments), 0) AS BIGINT), CAST(coalesce(sum(cancelled_cents), 0) AS BIGINT),
    CAST(coalesce(sum(outstanding_payments), 0) AS BIGINT), CAST(coalesce(sum(outstanding_cents), 0) AS BIGINT),
    max(days_past_due),
    CAST(coalesce(sum(difference_payments), 0) AS BIGINT), CAST(coalesce(sum(difference_cents), 0) AS BIGINT),
    coalesce(bool_and(ties), true), NULL
FROM rows;

CREATE VIEW exceptions_before_021 AS
SELECT * FROM exceptions_before_020
UNION ALL
SELECT
    'distribution_tie_out' AS kind, t.vehicle, 'distribution' AS object_type,
    coalesce(t.distribution_id, 'ref:' || coalesce(t.distribution_external_reference, '?')) AS object_id,
    NULL::VARCHAR AS source_file, NULL::VARCHAR AS sheet, NULL::INTEGER AS "row",
    t.difference_cents AS amount_cents,
    'sheet ' || t.sheet_payments || ' payment(s) ' || usd(t.sheet_cents) || ' vs service '
        || t.service_payments || ' payment(s) ' || usd(t.service_cents) || ' (disbursed '
        || usd(t.disbursed_cents) || ', failed ' || usd(t.failed_cents) || ', cancelled '
        || usd(t.cancelled_cents) || ', outstanding ' || usd(t.outstanding_cents) || ')' AS reason,
    'EX-' || upper(left(md5('distribution_tie_out|distribution|'
        || coalesce(t.distribution_id, 'ref:' || coalesce(t.distribution_external_reference, '?'))), 10))
        AS exception_id,
    t.vehicle_name, t.distribution_name, t.distribution_external_reference,
    NULL::VARCHAR AS entity, NULL::VARCHAR AS investor_name, NULL::VARCHAR AS investor_reference,
    'find the payments that differ on the Payments sheet (same distribution reference) and '
        || 'settle each; the distribution ties when they are' AS action,
    NULL::VARCHAR AS file_location,
    coalesce(t.distribution_name, '?') || coalesce(' (' || t.distribution_external_reference || ')', '')
        || coalesce(', ' || t.vehicle_name, '') || ' does not tie out: sheet '
        || t.sheet_payments || ' payment(s) ' || usd(t.sheet_cents) || ' vs service '
        || t.service_payments || ' payment(s) ' || usd(t.service_cents) || ' (disbursed '
        || usd(t.disbursed_cents) || ', failed ' || usd(t.failed_cents) || ', cancelled '
        || usd(t.cancelled_cents) || ', outstanding ' || usd(t.outstanding_cents) || ')' AS what
FROM distribution_tieout t
WHERE NOT t.is_total AND NOT t.ties;

-- Each account's closing balance per UTC month: the month-end figure once known, else the
-- month's last snapshot.
CREATE VIEW rollforward_snapshots AS
SELECT b.*, strftime(timezone('UTC', b.seen_at), '%Y-%m') AS period,
       timezone('UTC', date_trunc('month', timezone('UTC', b.seen_at))) AS period_start
FROM balance_points b
QUALIFY row_number() OVER (
    PARTITION BY b.financial_account, strftime(timezone('UTC', b.seen_at), '%Y-%m')
    ORDER BY b.seen_at DESC) = 1;

-- A payment that failed after it was disbursed is a `returned` movement of its account in the
-- month it failed: the money came back. The service may give no `failed_at` (ours, not the
-- interface's) nor `disbursed_at`: then the time fundpipe learned it is used — the sync that first
-- saw the payment failed (disbursed), from `status_history` — so the return explains the credit
-- instead of leaving it unexplained. A payment that failed without ever being disbursed (no
-- `disbursed_at` and never seen disbursed) moved no money and is neither.
CREATE VIEW rollforward_movement_lines AS
WITH debited AS (
    SELECT id AS financial_account, vehicle
    FROM financial_accounts
    WHERE type = 'depository'
    QUALIFY row_number() OVER (PARTITION BY vehicle ORDER BY created_at, id) = 1
), learned AS (
    SELECT id,
           min(seen_at) FILTER (WHERE status = 'disbursed') AS disbursed_seen_at,
           min(seen_at) FILTER (WHERE status = 'failed') AS failed_seen_at
    FROM status_history
    WHERE object = 'distribution_payment' AND seen_at < reconcile_cutoff()
    GROUP BY id
), timed AS (
    SELECT p.vehicle, p.distribution, p.amount_cents, p.status,
           coalesce(p.disbursed_at, l.disbursed_seen_at) AS disbursed_at,
           CASE WHEN p.status = 'failed' THEN coalesce(p.failed_at, l.failed_seen_at) END
               AS failed_at
    FROM payments_effective p
    LEFT JOIN learned l ON l.id = p.id
    WHERE p.status IN ('disbursed', 'failed')
), per AS (
    SELECT s.financial_account, s.period, p.distribution,
           CAST(-coalesce(sum(p.amount_cents) FILTER (
               WHERE p.disbursed_at >= s.period_start AND p.disbursed_at <= s.seen_at), 0) AS BIGINT)
               AS disbursed_cents,
           count(*) FILTER (WHERE p.disbursed_at >= s.period_start AND p.disbursed_at <= s.seen_at)
               AS disbursed_payments,
           CAST(coalesce(sum(p.amount_cents) FILTER (
               WHERE p.failed_at >= s.period_start AND p.failed_at <= s.seen_at), 0) AS BIGINT)
               AS returned_cents,
           count(*) FILTER (WHERE p.failed_at >= s.period_start AND p.failed_at <= s.seen_at)
               AS returned_payments
    FROM rollforward_snapshots s
    JOIN debited d ON d.financial_account = s.financial_account
    JOIN timed p
      ON p.vehicle = d.vehicle AND p.disbursed_at IS NOT NULL
     AND p.disbursed_at <= s.seen_at
     AND (p.disbursed_at >= s.period_start OR p.failed_at >= s.period_start)
    GROUP BY s.financial_account, s.period, p.distribution
)
SELECT financial_account, period, 'disbursed' AS kind, distribution AS distribution_id,
       disbursed_payments AS payments, disbursed_cents AS cents
FROM per WHERE disbursed_payments > 0
UNION ALL
SELECT financial_account, period, 'returned', distribution, returned_payments, returned_cents
FROM per WHERE returned_payments > 0;

-- Each account's closing balance per closed month: the last one recorded by the knowledge time.
CREATE VIEW period_closing_balances AS
SELECT * FROM period_closing_records
WHERE recorded_at < reconcile_cutoff()
QUALIFY row_number() OVER (PARTITION BY period, financial_account ORDER BY recorded_at DESC) = 1;

-- rollforward_periods: per account and month, opening + movements = closing; the opening balance
-- is the previous month's closing recorded at its close when that month is
-- closed (by the end of the as-of date), else the service's `total_end_of_last_month`.
CREATE VIEW rollforward_periods AS
WITH moved AS (
    SELECT financial_account, period,
           CAST(coalesce(sum(cents) FILTER (WHERE kind = 'disbursed'), 0) AS BIGINT) AS disbursed_cents,
           CAST(coalesce(sum(payments) FILTER (WHERE kind = 'disbursed'), 0) AS BIGINT)
               AS disbursed_payments,
           count(DISTINCT distribution_id) FILTER (WHERE kind = 'disbursed') AS disbursed_distributions,
           CAST(coalesce(sum(cents) FILTER (WHERE kind = 'returned'), 0) AS BIGINT) AS returned_cents
    FROM rollforward_movement_lines
    GROUP BY financial_account, period
), closings AS (
    SELECT b.period, b.financial_account, arg_min(b.closing_cents, b.recorded_at) AS closing_cents
    FROM period_closing_balances b
    JOIN closed_periods c ON c.period = b.period
    GROUP BY b.period, b.financial_account
), opened AS (
    SELECT s.*,
           coalesce(cl.closing_cents, s.total_end_of_last_month_cents) AS opening_cents,
           CASE WHEN cl.closing_cents IS NOT NULL THEN 'closed period ' || cl.period
                ELSE 'service month-end' END AS opening_source
    FROM rollforward_snapshots s
    LEFT JOIN closings cl
      ON cl.financial_account = s.financial_account
     AND cl.period = strftime(CAST(s.period || '-01' AS DATE) - INTERVAL 1 MONTH, '%Y-%m')
), raw AS (
    SELECT s.financial_account, s.vehicle, s.type, s.period, s.seen_at,
           s.opening_cents, s.opening_source,
           coalesce(m.disbursed_cents, 0) AS disbursed_cents,
           coalesce(m.disbursed_payments, 0) AS disbursed_payments,
           coalesce(m.disbursed_distributions, 0) AS disbursed_distributions,
           coalesce(m.returned_cents, 0) AS returned_cents,
           s.total_cents AS service_total_cents,
           s.total_cents - (s.opening_cents + coalesce(m.disbursed_cents, 0)
                            + coalesce(m.returned_cents, 0)) AS difference_cents,
           'EX-' || upper(left(md5('unexplained_balance|reconciling_item|' || s.financial_account
                                   || '|' || s.period), 10)) AS item_id,
           max(s.period) OVER (PARTITION BY s.financial_account) AS latest_period
    FROM opened s
    LEFT JOIN moved m ON m.financial_account = s.financial_account AND m.period = s.period
), explained AS (
    SELECT r.*,
           r.type = 'depository' AND EXISTS (
               SELECT 1 FROM exception_events ev
               WHERE ev.exception_id = r.item_id AND ev.event = 'acknowledged'
                 AND ev.event_at < reconcile_cutoff()
                 AND ev.amount_cents = r.difference_cents) AS acknowledged
    FROM raw r
)
SELECT
    e.financial_account, e.vehicle, e.type, e.period, e.seen_at AS balance_seen_at,
    e.opening_cents, e.disbursed_cents, e.disbursed_payments, e.disbursed_distributions,
    e.returned_cents,
    CASE WHEN e.acknowledged AND e.difference_cents > 0 THEN e.difference_cents ELSE 0 END
        AS credits_cents,
    CASE WHEN e.acknowledged AND e.difference_cents < 0 THEN e.difference_cents ELSE 0 END
        AS other_cents,
    CASE WHEN e.type <> 'depository' THEN e.difference_cents ELSE 0 END AS market_movement_cents,
    CASE WHEN e.type = 'depository' AND NOT e.acknowledged THEN e.service_total_cents - e.difference_cents
         ELSE e.service_total_cents END AS expected_closing_cents,
    e.service_total_cents,
    CASE WHEN e.type = 'depository' AND NOT e.acknowledged THEN e.difference_cents ELSE 0 END
        AS unexplained_cents,
    e.item_id, e.acknowledged, e.period = e.latest_period AS is_current,
    e.opening_source
FROM explained e;

CREATE VIEW reconciling_items AS
SELECT r.*, NOT r.is_current AS carried
FROM rollforward_periods r
WHERE r.type = 'depository' AND r.unexplained_cents <> 0;

-- rollforward: per account, the as-of month's roll-forward and its reconciling items, with where
-- the opening came from (`opening_source`).
CREATE VIEW rollforward AS
WITH carried AS (
    SELECT financial_account, count(*) AS carried_items,
           CAST(sum(unexplained_cents) AS BIGINT) AS carried_cents,
           string_agg(item_id || ' (' || period || ')', ', ' ORDER BY period) AS carried_item_ids
    FROM reconciling_items
    WHERE carried
    GROUP BY financial_account
)
SELECT
    r.financial_account, fa.name AS account_name, r.vehicle, v.name AS vehicle_name, r.type,
    r.period, r.balance_seen_at, r.opening_cents, r.disbursed_cents, r.disbursed_payments,
    r.disbursed_distributions, r.returned_cents, r.credits_cents, r.other_cents,
    r.market_movement_cents, r.expected_closing_cents, r.service_total_cents, r.unexplained_cents,
    coalesce(c.carried_items, 0) AS carried_items,
    coalesce(c.carried_cents, 0) AS carried_cents,
    r.unexplained_cents + coalesce(c.carried_cents, 0) AS reconciling_items_cents,
    CASE WHEN r.unexplained_cents <> 0 THEN r.item_id END AS reconciling_item_id,
    c.carried_item_ids,
    r.opening_source
FROM rollforward_periods r
LEFT JOIN carried c ON c.financial_account = r.financial_account
LEFT JOIN financial_accounts fa ON fa.id = r.financial_account
LEFT JOIN vehicles v ON v.id = r.vehicle
WHERE r.is_current;

CREATE VIEW exceptions_before_027 AS
SELECT * FROM exceptions_before_021 WHERE kind <> 'unexplained_balance'
UNION ALL
SELECT
    'unexplained_balance' AS kind, i.vehicle, 'financial_account' AS object_type,
    i.financial_account AS object_id,
    NULL::VARCHAR AS source_file, NULL::VARCHAR AS sheet, NULL::INTEGER AS "row",
    i.unexplained_cents AS amount_cents,
    CASE WHEN i.carried THEN 'carried from ' || i.period || ': ' ELSE i.period || ': ' END
        || 'opening ' || usd(i.opening_cents) || ', disbursed ' || usd(-i.disbursed_cents)
        || CASE WHEN i.returned_cents <> 0 THEN ', returned ' || usd(i.returned_cents) ELSE '' END
        || ' → expected ' || usd(i.expected_closing_cents) || ' vs service total '
        || usd(i.service_total_cents) || ' leaves ' || usd(i.unexplained_cents) || ' unexplained'
        AS reason,
    i.item_id AS exception_id,
    v.name AS vehicle_name,
    NULL::VARCHAR AS distribution_name, NULL::VARCHAR AS distribution_external_reference,
    NULL::VARCHAR AS entity, NULL::VARCHAR AS investor_name, NULL::VARCHAR AS investor_reference,
    'find the ' || CASE WHEN i.unexplained_cents > 0 THEN 'credit' ELSE 'debit' END || ' of '
        || usd(abs(i.unexplained_cents)) || ' on the ' || i.period || ' bank statement of '
        || coalesce(fa.name, i.financial_account)
        || ', then acknowledge this item with a note saying what it was' AS action,
    NULL::VARCHAR AS file_location,
    coalesce(v.name || ' (' || i.vehicle || ')', i.vehicle, '?') || ', account '
        || coalesce(fa.name, i.financial_account) || ': reconciling item '
        || CASE WHEN i.carried THEN 'carried from ' ELSE 'of ' END || i.period || ': '
        || 'opening ' || usd(i.opening_cents) || ', disbursed ' || usd(-i.disbursed_cents)
        || CASE WHEN i.returned_cents <> 0 THEN ', returned ' || usd(i.returned_cents) ELSE '' END
        || ' → expected ' || usd(i.expected_closing_cents) || ' vs service total '
        || usd(i.service_total_cents) || ' leaves ' || usd(i.unexplained_cents) || ' unexplained'
        AS what
FROM reconciling_items i
LEFT JOIN vehicles v ON v.id = i.vehicle
LEFT JOIN financial_accounts fa ON fa.id = i.financial_account;

-- The Roll-forward detail sheet: each account's current month's payment movements, one row per
-- kind and distribution; per account they sum to the roll-forward's disbursed and returned.
CREATE VIEW rollforward_movements AS
SELECT
    m.financial_account, fa.name AS account_name, r.vehicle, v.name AS vehicle_name, m.period,
    m.kind, d.name AS distribution_name, d.external_reference AS distribution_external_reference,
    m.payments, m.cents AS amount_cents, m.distribution_id
FROM rollforward_movement_lines m
JOIN rollforward_periods r
  ON r.financial_account = m.financial_account AND r.period = m.period AND r.is_current
LEFT JOIN distributions d ON d.id = m.distribution_id
LEFT JOIN financial_accounts fa ON fa.id = m.financial_account
LEFT JOIN vehicles v ON v.id = r.vehicle;

-- A late change to a closed month's payment is one exception, the after-close adjustment, and
-- only a person clears it: it is listed from the month it was learned in until someone
-- acknowledges it (and, acknowledged, stays listed so what it explains stays explained). The
-- payment's other symptoms point to it instead of opening their own: its amount difference or
-- status on the Payments sheet, its distribution's tie-out when the adjustments are the whole
-- difference, and the closed month's reconciling item when they are the whole item.
CREATE VIEW adjusted_payments AS
WITH listed AS (
    SELECT payment_id, vehicle, distribution_id, period, change_cents,
           'EX-' || upper(left(md5('after_close_adjustment|distribution_payment|' || payment_id), 10))
               AS exception_id
    FROM after_close_adjustments
), kept AS (
    -- learned in an earlier month, still open or acknowledged (never resolved by itself)
    SELECT s.object_id AS payment_id, s.vehicle, p.distribution AS distribution_id,
           strftime(p.effective_date, '%Y-%m') AS period, s.amount_cents AS change_cents,
           s.id AS exception_id, s.what, s.action, p.distribution_name,
           p.distribution_external_reference, p.entity
    FROM exception_states(reconcile_cutoff()) s
    LEFT JOIN payments_effective p ON p.id = s.object_id
    WHERE s.kind = 'after_close_adjustment' AND s.state IN ('open', 'acknowledged')
      AND s.object_id NOT IN (SELECT payment_id FROM listed)
)
SELECT *, false AS kept FROM listed
UNION ALL BY NAME
SELECT *, true AS kept FROM kept;

CREATE VIEW exceptions_before_028 AS
WITH adj AS (SELECT * FROM adjusted_payments),
per_distribution AS (
    SELECT distribution_id, CAST(sum(change_cents) AS BIGINT) AS change_cents
    FROM adj GROUP BY distribution_id
), per_month AS (
    SELECT vehicle, period, CAST(sum(change_cents) AS BIGINT) AS change_cents
    FROM adj GROUP BY vehicle, period
), pointing AS (
    SELECT x.exception_id
    FROM exceptions_before_027 x
    WHERE (x.kind IN ('amount_mismatch', 'status_mismatch')
           AND x.object_id IN (SELECT payment_id FROM adj))
       OR (x.kind = 'distribution_tie_out' AND EXISTS (
               SELECT 1 FROM per_distribution d
               WHERE d.distribution_id = x.object_id AND d.change_cents = x.amount_cents))
       OR (x.kind = 'unexplained_balance' AND x.exception_id IN (
               SELECT i.item_id FROM reconciling_items i
               JOIN per_month m ON m.vehicle = i.vehicle AND m.period = i.period
               WHERE i.unexplained_cents = m.change_cents))
)
SELECT x.* REPLACE (
    CASE WHEN x.kind = 'after_close_adjustment'
         THEN x.action || '; the payment''s difference on the Payments, Tie-out and '
              || 'Roll-forward sheets is this adjustment' ELSE x.action END AS action)
FROM exceptions_before_027 x
WHERE x.exception_id NOT IN (SELECT exception_id FROM pointing WHERE exception_id IS NOT NULL)
UNION ALL BY NAME
SELECT
    'after_close_adjustment' AS kind, a.vehicle, 'distribution_payment' AS object_type,
    a.payment_id AS object_id, NULL::VARCHAR AS source_file, NULL::VARCHAR AS sheet,
    NULL::INTEGER AS "row", a.change_cents AS amount_cents, a.what AS reason, a.exception_id,
    v.name AS vehicle_name, a.distribution_name, a.distribution_external_reference, a.entity,
    e.name AS investor_name, e.external_reference AS investor_reference,
    a.action,  -- as recorded when it was learned
    NULL::VARCHAR AS file_location, a.what
FROM adj a
LEFT JOIN vehicles v ON v.id = a.vehicle
LEFT JOIN entities e ON e.id = a.entity
WHERE a.kept;

-- An organization's materiality (session variable `materiality_cents`, default 0; the setting
-- FUNDPIPE_MATERIALITY): a reconciling item smaller than it (in absolute value) is listed on the
-- Roll-forward as every item is, but opens no exception.
CREATE MACRO materiality_cents() AS coalesce(TRY_CAST(getvariable('materiality_cents') AS BIGINT), 0);

CREATE VIEW exceptions_before_029 AS
SELECT * FROM exceptions_before_028
WHERE NOT (kind = 'unexplained_balance' AND abs(coalesce(amount_cents, 0)) < materiality_cents());

CREATE VIEW exceptions_before_041 AS
SELECT * FROM exceptions_before_029 x
WHERE NOT (x.kind = 'file_rejected' AND EXISTS (
    SELECT 1 FROM exception_events ev
    WHERE ev.exception_id = x.exception_id AND ev.event = 'acknowledged'
      AND ev.event_at < reconcile_cutoff()));

-- A rejected (or conflicting) file's exception names the sheet as a person does, not by its
-- path in the data folder (that is `file_location`): "Sheet q4_typo.csv rejected: 3 rows,
-- $2,000.00, received 2026-11-28; nothing in it was paid", not "file rejected/q4_typo.csv
-- (3 row(s), $2,000.00) was rejected on 2026-11-28: …" — in the reason and in the whole line
-- (`what`) the run's log, its summary, the alerts and the workbook's Exceptions sheet read.
-- The top layer of `exceptions`.
CREATE MACRO sheet_in_words(text) AS
    regexp_replace(
        regexp_replace(
            regexp_replace(
                regexp_replace(
                    text,
                    '^file (?:[^/]*/)*(.+) \(([0-9?]+ row\(s\)[^)]*)\) was rejected on ([0-9]{4}-[0-9]{2}-[0-9]{2}): ',
                    'Sheet \1 rejected: \2, received \3; '),
                '^(Sheet .+ rejected: 1) row\(s\)', '\1 row'),
            '^(Sheet .+ rejected: [0-9?]+) row\(s\)', '\1 rows'),
        '^file (?:[^/]*/)*(.+?) changes distributions already at the service',
        'Sheet \1 changes distributions already at the service');

CREATE VIEW exceptions AS
SELECT * REPLACE (
    CASE WHEN kind IN ('file_rejected', 'file_conflict') THEN sheet_in_words(reason)
         ELSE reason END AS reason,
    CASE WHEN kind IN ('file_rejected', 'file_conflict') THEN sheet_in_words(what)
         ELSE what END AS what)
FROM exceptions_before_041;
