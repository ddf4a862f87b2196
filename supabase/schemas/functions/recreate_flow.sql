-- sluice.recreate_flow, as the migrations create it (last defined in supabase/migrations/20261130001100_sluice_ensure_flow_compiled.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- A development recompile replaces the flow `old_slug` (the stored spelling of the definition's
-- slug). The aliases that point at it from other names are set aside and put back on the new
-- flow, generation and all, so its callers keep their name; the caller holds the flow lock.
CREATE OR REPLACE FUNCTION sluice.recreate_flow(old_slug text, definition jsonb, shape jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_kept sluice.aliases[];
begin
  with kept as (
    delete from sluice.aliases a
    where a.flow_slug = recreate_flow.old_slug and a.alias <> recreate_flow.old_slug
    returning a.*
  )
  select array_agg(k) into v_kept from kept k;
  perform sluice.delete_flow_and_data(old_slug, force => true);
  perform sluice.lock_queue_names(shape);
  perform sluice.validate_routes(definition, shape);
  perform sluice.create_flow(definition, shape);
  insert into sluice.aliases (alias, flow_slug, generation, activated_at)
  select k.alias, definition ->> 'flow_slug', k.generation, k.activated_at
  from unnest(v_kept) k;
end;
$$;
