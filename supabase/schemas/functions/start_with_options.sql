-- sluice.start_with_options, as the migrations create it (last defined in supabase/migrations/20261208002943_sluice_merge_flow_control.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Creates a run of the concrete flow `flow_slug`, started as `started_via`, honouring the start
-- options. As in migration 20261207232000, except that a new run (or a pending debounced start)
-- gets the start's `priority` (apply_run_priority), and a new run's `concurrency_key` is stored for
-- it before it is created (store_run_concurrency_key), so that its limited steps count under it.
CREATE OR REPLACE FUNCTION sluice.start_with_options(flow_slug text, started_via text, input jsonb, run_id uuid, options jsonb) RETURNS uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_key text := start_with_options.options ->> 'idempotency_key';
  v_concurrency_key text := start_with_options.options ->> 'concurrency_key';
  v_priority integer;
  v_run uuid;
  v_existing uuid;
  v_existing_input jsonb;
begin
  perform sluice.check_start_options(start_with_options.started_via, start_with_options.options);
  v_priority := coalesce((start_with_options.options ->> 'priority')::integer, 0);
  if start_with_options.options ? 'debounce' then
    if start_with_options.run_id is not null then
      raise exception 'Cannot start flow "%": a debounced start takes no run id (got %): its run id is the pending start''s',
        start_with_options.started_via, start_with_options.run_id
        using errcode = 'invalid_parameter_value';
    end if;
    v_run := sluice.start_debounced(start_with_options.flow_slug, start_with_options.started_via,
      start_with_options.input, start_with_options.options -> 'debounce');
    -- The last start's priority is the run's, as its input is.
    update sluice.debounced_starts d set priority = v_priority
    where d.run_id = v_run and d.priority <> v_priority;
    return v_run;
  end if;
  v_run := coalesce(start_with_options.run_id, gen_random_uuid());
  if v_key is null then
    perform sluice.store_run_concurrency_key(v_run, v_concurrency_key);
    perform sluice.create_run(start_with_options.flow_slug, start_with_options.started_via,
      start_with_options.input, v_run);
    perform sluice.apply_run_priority(v_run, v_priority);
    return v_run;
  end if;

  insert into sluice.idempotency_keys (flow_ref, idempotency_key, run_id)
  values (start_with_options.started_via, v_key, v_run)
  on conflict do nothing;
  if found then
    perform sluice.store_run_concurrency_key(v_run, v_concurrency_key);
    perform sluice.create_run(start_with_options.flow_slug, start_with_options.started_via,
      start_with_options.input, v_run);
    perform sluice.apply_run_priority(v_run, v_priority);
    return v_run;
  end if;

  -- The conflict waited for the key's claimer to commit: this statement's snapshot sees its row
  -- (under read committed; repeatable read raised a serialization failure in the insert).
  select k.run_id, r.input into v_existing, v_existing_input
  from sluice.idempotency_keys k
  join sluice.runs r on r.run_id = k.run_id
  where k.flow_ref = start_with_options.started_via and k.idempotency_key = v_key;
  if not found then
    raise exception 'Cannot start flow "%": idempotency key "%" is held by a transaction this one cannot see; retry',
      start_with_options.started_via, v_key
      using errcode = 'serialization_failure';
  end if;
  if v_existing_input is distinct from start_with_options.input then
    raise exception 'Cannot start flow "%": idempotency key "%" already started run % with another input',
      start_with_options.started_via, v_key, v_existing
      using errcode = 'SLI01',
        detail = json_build_object('idempotency_key', v_key, 'run_id', v_existing)::text,
        hint = 'Use a new key for new work; a retry of the same start passes the same input';
  end if;
  return v_existing;
end;
$$;
