-- sluice.begin_wait, as the migrations create it (last defined in supabase/migrations/20261207235622_sluice_flow_access_checks.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Starts a ready wait step (called by sluice.start_ready_steps, which holds the run's lock):
-- a wait whose dependency was skipped is skipped (it has nothing to wait on; its dependents see
-- it absent), a sleep whose due time has passed completes at once with it, a signal wait whose
-- key has a buffered signal completes at once with the earliest one's payload and consumes it,
-- and any other wait moves to 'waiting' (step:waiting) with its key and due time. A buffered
-- signal counts when it is not consumed, not expired, no larger than the flow's output limit, and
-- was sent after the run started (or the step accepts signals sent before its run). A subflow
-- step starts its child runs (sluice.start_subflow). The caller's loop starts what a completion
-- here releases.
CREATE OR REPLACE FUNCTION sluice.begin_wait(run_id uuid, flow_slug text, step_slug text, step_type text, deps_count integer, wait_options jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_state sluice.step_states;
  v_until timestamptz;
  v_signal sluice.signals;
  v_run_started timestamptz;
  v_max_bytes integer;
begin
  select * into v_state from sluice.step_states ss
  where ss.run_id = begin_wait.run_id and ss.step_slug = begin_wait.step_slug;

  if exists (
    select 1 from sluice.deps d
    join sluice.step_states ds on ds.run_id = begin_wait.run_id and ds.step_slug = d.dep_slug
    where d.flow_slug = begin_wait.flow_slug and d.step_slug = begin_wait.step_slug
      and ds.status = 'skipped'
  ) then
    perform sluice.skip_steps(begin_wait.run_id, begin_wait.flow_slug, begin_wait.step_slug,
      'dependency_skipped', false);
    return;
  end if;

  if begin_wait.step_type = 'subflow' then
    perform sluice.start_subflow(begin_wait.run_id, begin_wait.flow_slug, begin_wait.step_slug,
      begin_wait.wait_options);
    return;
  end if;

  if begin_wait.step_type = 'sleep' then
    if v_state.wait_seconds is null and v_state.wait_until is null then
      raise exception 'Cannot start sleep step "%" of run %: it has no due time (its dependency completed without one)',
        begin_wait.step_slug, begin_wait.run_id
        using errcode = 'invalid_parameter_value';
    end if;
    v_until := coalesce(now() + make_interval(secs => v_state.wait_seconds), v_state.wait_until);
    update sluice.step_states ss
    set status = 'waiting', waiting_at = now(), wait_until = v_until
    where ss.run_id = begin_wait.run_id and ss.step_slug = begin_wait.step_slug;
    if v_until <= now() then
      perform sluice.complete_step(begin_wait.run_id, begin_wait.flow_slug,
        begin_wait.step_slug, to_jsonb(sluice.iso_instant(v_until)));
    end if;
    return;
  end if;

  if v_state.wait_key is null then
    raise exception 'Cannot start signal wait step "%" of run %: it has no signal key (its dependency completed without one)',
      begin_wait.step_slug, begin_wait.run_id
      using errcode = 'invalid_parameter_value';
  end if;
  -- Normally held already (sluice.complete_tasks takes it before the run lock); a no-op then. It
  -- also makes this the only consumer of the key's buffered signals until the transaction ends.
  perform sluice.lock_signal_keys(array[v_state.wait_key]);
  update sluice.step_states ss
  set status = 'waiting', waiting_at = now(),
    wait_until = now() + make_interval(secs => (begin_wait.wait_options ->> 'timeout_seconds')::integer)
  where ss.run_id = begin_wait.run_id and ss.step_slug = begin_wait.step_slug;

  select r.started_at into v_run_started from sluice.runs r where r.run_id = begin_wait.run_id;
  select f.opt_max_output_bytes into v_max_bytes from sluice.flows f
  where f.flow_slug = begin_wait.flow_slug;
  select * into v_signal from sluice.signals s
  where s.signal_key = v_state.wait_key
    and s.consumed_at is null
    and s.expires_at > now()
    and (s.sent_at >= v_run_started
      or begin_wait.wait_options -> 'accept_signals_sent_before_run' = 'true'::jsonb)
    and octet_length(s.payload::text) <= v_max_bytes
    -- Only a sender with access to this flow approves its waits (per-flow grants).
    and sluice.sender_covers(s.sent_by, begin_wait.flow_slug)
  order by s.sent_at, s.signal_id
  limit 1;
  if found then
    update sluice.signals s set consumed_at = now() where s.signal_id = v_signal.signal_id;
    update sluice.step_states ss set wait_signal_id = v_signal.signal_id
    where ss.run_id = begin_wait.run_id and ss.step_slug = begin_wait.step_slug;
    perform sluice.complete_step(begin_wait.run_id, begin_wait.flow_slug, begin_wait.step_slug,
      v_signal.payload);
  end if;
end;
$$;
