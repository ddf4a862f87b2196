-- sluice.check_subflow_child, as the migrations create it (last defined in supabase/migrations/20261207002000_sluice_subflows.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Refuses, at compile time of the parent, a subflow step whose child is not compiled: by slug,
-- no such flow; by alias, no such alias (a child's end would otherwise surface only when a run
-- reaches the step). Other steps pass.
CREATE OR REPLACE FUNCTION sluice.check_subflow_child(flow_slug text, step jsonb) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_ref text := step #>> '{wait,subflow,flow}';
begin
  if step ->> 'step_type' is distinct from 'subflow' then
    return;
  end if;
  if step #>> '{wait,subflow,by}' = 'alias'
    and not exists (select 1 from sluice.aliases a where a.alias = v_ref)
  then
    raise exception 'Cannot compile flow "%": subflow step "%" starts its child by the alias "%", which no compiled flow has',
      check_subflow_child.flow_slug, step ->> 'step_slug', v_ref
      using errcode = 'invalid_parameter_value',
        hint = 'Compile (deploy) the child flow first: its worker compiles it when it starts';
  end if;
  if step #>> '{wait,subflow,by}' = 'slug'
    and not exists (select 1 from sluice.flows f where f.flow_slug = v_ref)
  then
    raise exception 'Cannot compile flow "%": subflow step "%" starts the flow "%", which is not compiled',
      check_subflow_child.flow_slug, step ->> 'step_slug', v_ref
      using errcode = 'invalid_parameter_value',
        hint = 'Compile (deploy) the child flow first: its worker compiles it when it starts';
  end if;
end;
$$;
