-- sluice.is_valid_slug, as the migrations create it (last defined in supabase/migrations/20261130000100_sluice_definitions.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Slug rules (docs/architecture.md#queue-modes-and-names): a letter first, then letters, digits
-- and single underscores, no trailing underscore. The DSL checks the same rules synchronously;
-- this is the authority.
CREATE OR REPLACE FUNCTION sluice.is_valid_slug(slug text) RETURNS boolean
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
  select slug is not null
    and slug ~ '^[A-Za-z][A-Za-z0-9_]*$'
    and slug !~ '__'
    and slug !~ '_$'
    and length(slug) <= 128
$_$;
