-- sluice.dependency_outputs, as the migrations create it (last defined in supabase/migrations/20261130000400_sluice_run_transitions.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The input of a step with dependencies: the outputs of its completed dependencies, keyed by
-- their slugs (a skipped dependency is absent). Read when the step starts (its condition is
-- tested against it) and again when each of its tasks is claimed.
--
-- PL/pgSQL, not SQL: the claim calls it once per claimed task, and a SQL function with a
-- subquery is not inlined, so it would be planned again on every claim.
CREATE OR REPLACE FUNCTION sluice.dependency_outputs(run_id uuid, flow_slug text, step_slug text) RETURNS jsonb
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  return (
    select coalesce(jsonb_object_agg(d.dep_slug, ds.output), '{}'::jsonb)
    from sluice.deps d
    join sluice.step_states ds
      on ds.run_id = dependency_outputs.run_id and ds.step_slug = d.dep_slug
    where d.flow_slug = dependency_outputs.flow_slug
      and d.step_slug = dependency_outputs.step_slug
      and ds.status = 'completed'
  );
end;
$$;
