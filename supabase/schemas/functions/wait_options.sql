-- sluice.wait_options, as the migrations create it (last defined in supabase/migrations/20261207002000_sluice_subflows.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- A wait step's options in the shape (null for a handler step), defaults filled in; a subflow's
-- names its child ({subflow: {flow, by, map}}). A signal
-- wait that accepts signals sent before its run started carries accept_signals_sent_before_run
-- (only then: the shape of every other flow stays what it was).
CREATE OR REPLACE FUNCTION sluice.wait_options(step jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case step ->> 'step_type'
    when 'sleep' then '{}'::jsonb
    when 'subflow' then jsonb_build_object('subflow', step #> '{wait,subflow}')
    when 'signal' then jsonb_build_object(
      'timeout_seconds', coalesce(step #> '{wait,timeout_seconds}', 'null'::jsonb),
      'on_timeout', coalesce(step #>> '{wait,on_timeout}', 'fail'),
      'timeout_value', coalesce(step #> '{wait,timeout_value}', 'null'::jsonb))
      || case when step #> '{wait,accept_signals_sent_before_run}' = 'true'::jsonb
        then '{"accept_signals_sent_before_run": true}'::jsonb else '{}'::jsonb end
  end
$$;
