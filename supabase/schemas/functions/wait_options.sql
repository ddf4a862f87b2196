-- sluice.wait_options, as the migrations create it (last defined in supabase/migrations/20261202000300_sluice_waits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- A wait step's options in the shape (null for a handler step), defaults filled in.
CREATE OR REPLACE FUNCTION sluice.wait_options(step jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE
    AS $$
  select case step ->> 'step_type'
    when 'sleep' then '{}'::jsonb
    when 'signal' then jsonb_build_object(
      'timeout_seconds', coalesce(step #> '{wait,timeout_seconds}', 'null'::jsonb),
      'on_timeout', coalesce(step #>> '{wait,on_timeout}', 'fail'),
      'timeout_value', coalesce(step #> '{wait,timeout_value}', 'null'::jsonb))
  end
$$;
