-- sluice.release_due_waits, as the migrations create it (last defined in supabase/migrations/20261207001000_sluice_batch_sizes.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Releases the waits that are due (at most batch_size, from 1 to 10,000, earliest first): a sleep completes with
-- its due time (an ISO instant) as its output; a signal wait past its timeout follows its
-- on_timeout: 'fail' fails the run, 'skip' skips the step (reason wait_timed_out; dependents run
-- without it), 'value' completes it with the timeout value. Dependents start in the same
-- transaction. Every worker's heartbeat calls it; pg_cron may too. Runs another transaction
-- holds are skipped (their waits are released by a later call), and each wait is re-checked
-- under its run's lock: many concurrent sweepers release each wait exactly once. Returns how
-- many waits it released.
CREATE OR REPLACE FUNCTION sluice.release_due_waits(batch_size integer DEFAULT 100) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_run_ids uuid[];
  v_slugs text[];
  v_state sluice.step_states;
  v_step sluice.steps;
  v_released integer := 0;
  v_runs uuid[] := '{}';
  v_run uuid;
begin
  -- A zero or negative size used to be clamped to 1 silently: refused, naming it.
  if release_due_waits.batch_size is null or release_due_waits.batch_size < 1
    or release_due_waits.batch_size > 10000
  then
    raise exception 'Cannot release due waits: batch_size must be from 1 to 10000, got %',
      coalesce(release_due_waits.batch_size::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  select array_agg(c.run_id), array_agg(c.step_slug) into v_run_ids, v_slugs
  from (
    select ss.run_id, ss.step_slug from sluice.step_states ss
    where ss.status = 'waiting' and ss.wait_until <= now()
    order by ss.wait_until
    limit release_due_waits.batch_size
  ) c;
  if v_run_ids is null then
    return 0;
  end if;

  for v_state in select * from sluice.lock_run_steps(v_run_ids, v_slugs, true) loop
    continue when v_state.status <> 'waiting' or v_state.wait_until > now();
    select * into v_step from sluice.steps s
    where s.flow_slug = v_state.flow_slug and s.step_slug = v_state.step_slug;
    -- A run failed by an earlier wait of this loop is no longer started.
    continue when (select r.status from sluice.runs r where r.run_id = v_state.run_id)
      <> 'started';
    v_released := v_released + 1;
    if v_step.step_type = 'sleep' then
      perform sluice.complete_step(v_state.run_id, v_state.flow_slug, v_state.step_slug,
        to_jsonb(sluice.iso_instant(v_state.wait_until)));
    elsif v_step.wait_options ->> 'on_timeout' = 'fail' then
      perform sluice.fail_run(v_state.run_id, v_state.step_slug,
        format('step "%s" timed out after %s s waiting for a signal with key "%s"',
          v_state.step_slug, v_step.wait_options ->> 'timeout_seconds', v_state.wait_key));
      continue;
    elsif v_step.wait_options ->> 'on_timeout' = 'skip' then
      perform sluice.skip_steps(v_state.run_id, v_state.flow_slug, v_state.step_slug,
        'wait_timed_out', false);
    else
      perform sluice.complete_step(v_state.run_id, v_state.flow_slug, v_state.step_slug,
        v_step.wait_options -> 'timeout_value');
    end if;
    if not (v_state.run_id = any (v_runs)) then
      v_runs := v_runs || v_state.run_id;
    end if;
  end loop;

  foreach v_run in array v_runs loop
    perform sluice.start_ready_steps(v_run);
  end loop;
  return v_released;
end;
$$;
