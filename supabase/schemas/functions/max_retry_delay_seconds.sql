-- sluice.max_retry_delay_seconds, as the migrations create it (last defined in supabase/migrations/20261130000350_sluice_retry_policy.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The retry delay a handler may select, and the cap on computed backoff: one day.
CREATE OR REPLACE FUNCTION sluice.max_retry_delay_seconds() RETURNS integer
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select 86400 $$;
