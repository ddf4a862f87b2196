-- sluice.fail_run, as the migrations create it (last defined in supabase/migrations/20261202000300_sluice_waits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.fail_run(run_id uuid, step_slug text, error_message text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  update sluice.runs r
  set status = 'failed', failed_at = now(), error_message = fail_run.error_message
  where r.run_id = fail_run.run_id and r.status = 'started';

  update sluice.step_states ss
  set status = case when ss.step_slug = fail_run.step_slug then 'failed' else 'cancelled' end,
    failed_at = case when ss.step_slug = fail_run.step_slug then now() end,
    cancelled_at = case when ss.step_slug = fail_run.step_slug then null else now() end,
    error_message = case
      when ss.step_slug = fail_run.step_slug then fail_run.error_message
      else ss.error_message
    end
  where ss.run_id = fail_run.run_id and ss.status in ('created', 'started', 'waiting');

  perform sluice.terminate_tasks(fail_run.run_id, null, 'cancelled');
end;
$$;
