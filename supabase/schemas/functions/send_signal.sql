-- sluice.send_signal, as the migrations create it (last defined in supabase/migrations/20261207000500_sluice_signals_schedules.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Sends a signal: records it (idempotent by signal_id while it is kept) and completes every step
-- waiting on the key now with the payload, starting their dependents, in the caller's
-- transaction; the signal is then consumed. A signal no step waits for yet is buffered for
-- sluice.signal_lifetime() (sluice.begin_wait). Refused before anything is written: a key or id
-- that is not 1 to 1000 characters (invalid_parameter_value), a payload over the output limit
-- (SLL01, detail {limit, size, max}: the default limit, or the smaller max_output_bytes of a flow
-- with a step waiting on the key), a signal id sent before with another key (SLS01, detail
-- {signal_id, key, existing_key}).
CREATE OR REPLACE FUNCTION sluice.send_signal(key text, payload jsonb, signal_id text) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_payload jsonb := coalesce(send_signal.payload, 'null'::jsonb);
  v_bytes bigint;
  v_existing sluice.signals;
  v_run_ids uuid[];
  v_slugs text[];
  v_too_large record;
  v_state sluice.step_states;
  v_inserted boolean;
  v_sent_at timestamptz;
  v_released integer := 0;
  v_runs uuid[] := '{}';
  v_run uuid;
begin
  if send_signal.key is null
    or char_length(send_signal.key) not between 1 and sluice.max_signal_key_length()
  then
    raise exception 'Cannot send signal %: the key must be a string of 1 to % characters, got %',
      coalesce(send_signal.signal_id, 'null'), sluice.max_signal_key_length(),
      coalesce(left(send_signal.key, 100), 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if send_signal.signal_id is null
    or char_length(send_signal.signal_id) not between 1 and sluice.max_signal_key_length()
  then
    raise exception 'Cannot send signal with key "%": the signal id must be a string of 1 to % characters, got %',
      left(send_signal.key, 100), sluice.max_signal_key_length(),
      coalesce(left(send_signal.signal_id, 100), 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  v_bytes := octet_length(v_payload::text);
  if v_bytes > sluice.default_max_json_bytes() then
    raise exception 'Cannot send signal "%": the payload is % bytes as JSON, more than the limit of % bytes (max_output_bytes: it becomes a wait step''s output)',
      left(send_signal.signal_id, 100), v_bytes, sluice.default_max_json_bytes()
      using errcode = 'SLL01', detail = json_build_object('limit', 'max_output_bytes',
        'size', v_bytes, 'max', sluice.default_max_json_bytes())::text;
  end if;

  perform sluice.lock_signal_keys(array[send_signal.key]);

  v_sent_at := clock_timestamp();
  insert into sluice.signals (signal_id, signal_key, payload, sent_at, expires_at)
  values (send_signal.signal_id, send_signal.key, v_payload, v_sent_at,
    v_sent_at + sluice.signal_lifetime())
  on conflict on constraint signals_pkey do nothing
  returning true into v_inserted;
  if v_inserted is null then
    select * into v_existing from sluice.signals s where s.signal_id = send_signal.signal_id;
    perform sluice.signal_id_taken(v_existing, send_signal.key);
    return jsonb_build_object('signal_id', send_signal.signal_id, 'outcome', 'duplicate',
      'released', 0);
  end if;

  select array_agg(ss.run_id), array_agg(ss.step_slug) into v_run_ids, v_slugs
  from sluice.step_states ss
  where ss.status = 'waiting' and ss.wait_key = send_signal.key;

  select f.flow_slug, f.opt_max_output_bytes into v_too_large
  from sluice.step_states ss
  join sluice.flows f on f.flow_slug = ss.flow_slug
  where ss.status = 'waiting' and ss.wait_key = send_signal.key
    and f.opt_max_output_bytes < v_bytes
  limit 1;
  if found then
    -- Raising undoes the insert above: nothing of the signal is written.
    raise exception 'Cannot send signal "%": the payload is % bytes as JSON, more than the limit of % bytes of flow "%", which waits on key "%" (max_output_bytes)',
      left(send_signal.signal_id, 100), v_bytes, v_too_large.opt_max_output_bytes,
      v_too_large.flow_slug, left(send_signal.key, 100)
      using errcode = 'SLL01', detail = json_build_object('limit', 'max_output_bytes',
        'size', v_bytes, 'max', v_too_large.opt_max_output_bytes)::text;
  end if;

  if v_run_ids is not null then
    for v_state in select * from sluice.lock_run_steps(v_run_ids, v_slugs, false) loop
      continue when v_state.status <> 'waiting' or v_state.wait_key <> send_signal.key;
      update sluice.step_states ss set wait_signal_id = send_signal.signal_id
      where ss.run_id = v_state.run_id and ss.step_slug = v_state.step_slug;
      perform sluice.complete_step(v_state.run_id, v_state.flow_slug, v_state.step_slug,
        v_payload);
      v_released := v_released + 1;
      if not (v_state.run_id = any (v_runs)) then
        v_runs := v_runs || v_state.run_id;
      end if;
    end loop;
    foreach v_run in array v_runs loop
      perform sluice.start_ready_steps(v_run);
    end loop;
  end if;
  if v_released > 0 then
    update sluice.signals s set consumed_at = now() where s.signal_id = send_signal.signal_id;
  end if;

  return jsonb_build_object('signal_id', send_signal.signal_id, 'outcome', 'sent',
    'released', v_released);
end;
$$;
