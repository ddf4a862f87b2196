-- sluice.max_idempotency_key_length, as the migrations create it (last defined in supabase/migrations/20261207001300_sluice_idempotent_start.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The longest idempotency key, in characters.
CREATE OR REPLACE FUNCTION sluice.max_idempotency_key_length() RETURNS integer
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select 255 $$;
