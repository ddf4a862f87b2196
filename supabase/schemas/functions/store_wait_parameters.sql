-- sluice.store_wait_parameters, as the migrations create it (last defined in supabase/migrations/20261207002000_sluice_subflows.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Stores what the live attempt of `step_slug` computed for the wait steps that depend on it:
-- waits is a JSON array of {step_slug, key} (a signal wait) or {step_slug, until | seconds}
-- (a sleep) or {step_type, input} (a subflow: its child input; a map subflow's an array of
-- them). Refuses (and so rolls back the completion) an entry for a step that is not a wait
-- depending on step_slug, a wait of it left without an entry, or a malformed value: the
-- completion of a dependency is the one moment a wait's parameters can be known.
-- The caller holds the run's lock (sluice.complete_tasks).
CREATE OR REPLACE FUNCTION sluice.store_wait_parameters(run_id uuid, flow_slug text, step_slug text, waits jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_wait record;
  v_entry jsonb;
begin
  for v_wait in
    select s.step_slug, s.step_type
    from sluice.deps d
    join sluice.steps s on s.flow_slug = d.flow_slug and s.step_slug = d.step_slug
    where d.flow_slug = store_wait_parameters.flow_slug
      and d.dep_slug = store_wait_parameters.step_slug
      and s.step_type in ('sleep', 'signal', 'subflow')
  loop
    select w.value into v_entry
    from jsonb_array_elements(coalesce(store_wait_parameters.waits, '[]'::jsonb)) as w(value)
    where w.value ->> 'step_slug' = v_wait.step_slug;
    if v_entry is null then
      raise exception 'Cannot complete step "%" of run %: the result carries no % of wait step "%", which depends on it',
        store_wait_parameters.step_slug, store_wait_parameters.run_id,
        case v_wait.step_type when 'signal' then 'signal key' when 'subflow' then 'child input'
          else 'due time' end,
        v_wait.step_slug
        using errcode = 'invalid_parameter_value',
          hint = 'A worker of sluice 0.2 computes it; upgrade the workers of the flow';
    end if;
    if v_wait.step_type = 'signal' and (jsonb_typeof(v_entry -> 'key') is distinct from 'string'
      or char_length(v_entry ->> 'key') not between 1 and sluice.max_signal_key_length())
    then
      raise exception 'Cannot complete step "%" of run %: the signal key of wait step "%" must be a string of 1 to % characters, got %',
        store_wait_parameters.step_slug, store_wait_parameters.run_id, v_wait.step_slug,
        sluice.max_signal_key_length(), left(coalesce(v_entry -> 'key', 'null')::text, 100)
        using errcode = 'invalid_parameter_value';
    end if;
    if v_wait.step_type = 'sleep' and not (
      (jsonb_typeof(v_entry -> 'until') = 'string' and v_entry -> 'seconds' is null)
      or (jsonb_typeof(v_entry -> 'seconds') = 'number' and v_entry -> 'until' is null
        and (v_entry ->> 'seconds')::numeric between 0 and 2147483647
        and (v_entry ->> 'seconds')::numeric = trunc((v_entry ->> 'seconds')::numeric)))
    then
      raise exception 'Cannot complete step "%" of run %: the due time of sleep step "%" must be {until: timestamp} or {seconds: whole number from 0}, got %',
        store_wait_parameters.step_slug, store_wait_parameters.run_id, v_wait.step_slug,
        left(v_entry::text, 200)
        using errcode = 'invalid_parameter_value';
    end if;
    if v_wait.step_type = 'subflow' and not (v_entry ? 'input') then
      raise exception 'Cannot complete step "%" of run %: the entry of subflow step "%" must carry its child input as "input", got %',
        store_wait_parameters.step_slug, store_wait_parameters.run_id, v_wait.step_slug,
        left(v_entry::text, 200)
        using errcode = 'invalid_parameter_value';
    end if;
    update sluice.step_states ss
    set wait_input = case when v_wait.step_type = 'subflow' then v_entry -> 'input' end,
      wait_key = v_entry ->> 'key',
      wait_until = (v_entry ->> 'until')::timestamptz,
      wait_seconds = (v_entry ->> 'seconds')::integer
    where ss.run_id = store_wait_parameters.run_id and ss.step_slug = v_wait.step_slug
      and ss.status = 'created';
  end loop;
end;
$$;
