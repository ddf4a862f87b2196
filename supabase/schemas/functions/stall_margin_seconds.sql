-- sluice.stall_margin_seconds, as the migrations create it (last defined in supabase/migrations/20261130000350_sluice_retry_policy.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The margin past a task's effective timeout after which a started attempt counts as stalled: a
-- live worker would have aborted its handler at the timeout and reported it by then. The claim
-- hides a duplicate's message until then; stalled recovery requeues (or exhausts) after it.
CREATE OR REPLACE FUNCTION sluice.stall_margin_seconds() RETURNS integer
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$ select 30 $$;
