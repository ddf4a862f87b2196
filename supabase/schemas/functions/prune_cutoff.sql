-- sluice.prune_cutoff, as the migrations create it (last defined in supabase/migrations/20261207000400_sluice_pin_search_path.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The cutoff of a prune (now() - retention, fixed once: now() moves with every batch's
-- transaction), after checking both arguments.
CREATE OR REPLACE FUNCTION sluice.prune_cutoff(retention interval, batch_size integer) RETURNS timestamp with time zone
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if retention is null or retention < interval '0' then
    raise exception 'Cannot prune: retention must be a non-negative interval, got %',
      coalesce(retention::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if batch_size is null or batch_size < 1 then
    raise exception 'Cannot prune: batch_size must be a positive integer, got %',
      coalesce(batch_size::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  return now() - retention;
end;
$$;
