-- sluice.backoff_delay_seconds, as the migrations create it (last defined in supabase/migrations/20261130000350_sluice_retry_policy.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Exponential backoff: base * 2^(attempt - 1), capped. The exponent is clamped first so high
-- attempt counts cannot overflow.
CREATE OR REPLACE FUNCTION sluice.backoff_delay_seconds(base_delay integer, attempt integer) RETURNS integer
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select least(
    sluice.max_retry_delay_seconds()::double precision,
    base_delay * power(2::double precision, least(greatest(attempt - 1, 0), 30))
  )::integer
$$;
