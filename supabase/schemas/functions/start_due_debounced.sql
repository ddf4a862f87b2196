-- sluice.start_due_debounced, as the migrations create it (last defined in supabase/migrations/20261207234000_sluice_priorities.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The sweep of due debounced starts (the worker's heartbeat calls it every beat, like
-- release_due_waits): takes up to batch_size due rows (skip locked: a start holding one is
-- extending it), and for each deletes it and creates its run with its last input and run id, as
-- the name it was started by resolves now (an alias: the flow it points at when the run starts).
-- A start whose run cannot be created (its flow or alias was deleted) keeps its row with the
-- error and is not retried; the others go on. Returns how many runs it created.
-- As in migration 20261207232000, except that the run gets the pending start's priority.
CREATE OR REPLACE FUNCTION sluice.start_due_debounced(batch_size integer DEFAULT 100) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_row record;
  v_flow text;
  v_started integer := 0;
begin
  if start_due_debounced.batch_size is null or start_due_debounced.batch_size < 1
    or start_due_debounced.batch_size > 10000
  then
    raise exception 'Cannot start due debounced starts: batch_size must be an integer from 1 to 10000, got %',
      coalesce(start_due_debounced.batch_size::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  for v_row in
    select d.*
    from sluice.debounced_starts d
    where d.error_message is null and d.due_at <= clock_timestamp()
    order by d.due_at
    limit start_due_debounced.batch_size
    for update skip locked
  loop
    begin
      delete from sluice.debounced_starts d
      where d.flow_ref = v_row.flow_ref and d.debounce_key = v_row.debounce_key;
      -- Started through an alias: the flow it names now; a concrete start: that flow.
      v_flow := v_row.flow_slug;
      if v_row.flow_ref <> v_row.flow_slug then
        select a.flow_slug into v_flow from sluice.aliases a where a.alias = v_row.flow_ref;
      end if;
      if v_flow is null or not exists (select 1 from sluice.flows f where f.flow_slug = v_flow)
      then
        raise exception 'Cannot start flow "%": no flow or alias has that name', v_row.flow_ref
          using errcode = 'no_data_found';
      end if;
      perform set_config('sluice.traceparent', coalesce(v_row.traceparent, ''), true);
      perform sluice.create_run(v_flow, v_row.flow_ref, v_row.input, v_row.run_id);
      perform sluice.apply_run_priority(v_row.run_id, v_row.priority);
      v_started := v_started + 1;
    exception when others then
      -- The block's writes rolled back (the row is back); record why, for waitForRun and ops.
      update sluice.debounced_starts d
      set error_message = left(sqlerrm, 1000)
      where d.flow_ref = v_row.flow_ref and d.debounce_key = v_row.debounce_key;
    end;
  end loop;
  perform set_config('sluice.traceparent', '', true);
  return v_started;
end;
$$;
