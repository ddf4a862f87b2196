-- sluice.is_valid_queue_name, as the migrations create it (last defined in supabase/migrations/20261130001000_sluice_queue_names.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The one queue-name rule, for every path (generated and routed): ASCII lowercase letters, digits
-- and underscores, at most max_queue_name_length() bytes. PGMQ builds table names from the queue
-- name and PostgreSQL truncates identifiers at 63 bytes, so the limit is counted in bytes: names
-- counted in characters (two-byte letters) could truncate to one table. queue_name.ts mirrors it.
CREATE OR REPLACE FUNCTION sluice.is_valid_queue_name(queue_name text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
  select queue_name is not null
    and queue_name ~ '^[a-z0-9_]+$'
    and octet_length(queue_name) <= sluice.max_queue_name_length()
$_$;
