-- sluice.definition_shape, as the migrations create it (last defined in supabase/migrations/20261202000300_sluice_waits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.definition_shape(definition jsonb) RETURNS jsonb
    LANGUAGE sql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select jsonb_build_object(
    'queue_mode', definition ->> 'queue_mode',
    'steps', jsonb_agg(jsonb_build_object(
      'step_slug', e.step ->> 'step_slug',
      'step_type', e.step ->> 'step_type',
      'deps', e.step -> 'deps',
      'map_source', coalesce(e.step -> 'map_source', 'null'::jsonb),
      'required_input_pattern', coalesce(e.step -> 'required_input_pattern', 'null'::jsonb),
      'forbidden_input_pattern', coalesce(e.step -> 'forbidden_input_pattern', 'null'::jsonb),
      'when_unmet', coalesce(e.step ->> 'when_unmet', 'skip'),
      'when_exhausted', coalesce(e.step ->> 'when_exhausted', 'fail'),
      'wait', sluice.wait_options(e.step),
      'queue_name', case definition ->> 'queue_mode'
        when 'routed' then definition -> 'routes' -> (e.ord::integer - 1) ->> 'queue_name'
        else sluice.derive_queue_name(
          definition ->> 'queue_mode', definition ->> 'flow_slug', e.step ->> 'step_slug',
          e.ord::integer - 1)
      end
    ) order by e.ord)
  )
  from jsonb_array_elements(definition -> 'steps') with ordinality as e(step, ord)
$$;
