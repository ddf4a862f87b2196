-- sluice.worker_heartbeat_ttl, as the migrations create it (last defined in supabase/migrations/20261130000300_sluice_workers.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- A worker counts as alive while it has not stopped and its heartbeat is fresh.
CREATE OR REPLACE FUNCTION sluice.worker_heartbeat_ttl() RETURNS interval
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select interval '30 seconds' $$;
