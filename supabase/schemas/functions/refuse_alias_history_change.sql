-- sluice.refuse_alias_history_change, as the migrations create it (last defined in supabase/migrations/20261130001800_sluice_aliases.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- History is evidence: a row, once written, stays as it was.
CREATE OR REPLACE FUNCTION sluice.refuse_alias_history_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  raise exception 'Cannot % sluice.alias_history: the alias history is append-only', lower(tg_op)
    using errcode = 'insufficient_privilege';
end;
$$;
