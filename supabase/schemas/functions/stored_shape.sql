-- sluice.stored_shape, as the migrations create it (last defined in supabase/migrations/20261202000300_sluice_waits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.stored_shape(flow_slug text) RETURNS jsonb
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select jsonb_build_object(
    'queue_mode', f.queue_mode,
    'steps', (
      select jsonb_agg(jsonb_build_object(
        'step_slug', s.step_slug,
        'step_type', s.step_type,
        'deps', coalesce((
          select jsonb_agg(d.dep_slug order by d.dep_slug collate "C")
          from sluice.deps d where d.flow_slug = s.flow_slug and d.step_slug = s.step_slug
        ), '[]'::jsonb),
        'map_source', to_jsonb(s.map_source),
        'required_input_pattern', s.required_input_pattern,
        'forbidden_input_pattern', s.forbidden_input_pattern,
        'when_unmet', s.when_unmet,
        'when_exhausted', s.when_exhausted,
        'wait', coalesce(s.wait_options, 'null'::jsonb),
        'queue_name', s.queue_name
      ) order by s.step_index)
      from sluice.steps s where s.flow_slug = f.flow_slug
    )
  )
  from sluice.flows f
  where f.flow_slug = stored_shape.flow_slug
$$;
