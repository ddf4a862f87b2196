-- sluice.send_signal, as the migrations create it (last defined in supabase/migrations/20261202000300_sluice_waits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Sends a signal: records it under signal_id (idempotent: a signal_id sent before changes
-- nothing and answers 'duplicate'; the same id with another key is refused) and completes every
-- step waiting on `key` with `payload` as its output, starting their dependents, all in the
-- caller's transaction (a rolled-back signal is never seen). A signal no step waits for yet is
-- kept: a wait that starts on its key later completes at once with the earliest kept signal.
-- Answers {signal_id, outcome: sent | duplicate, released: how many waiting steps it completed}.
-- Lock order: the key's advisory lock, then the runs of the waiting steps (sluice.lock_run_steps,
-- run_id order), their step states, what starting their dependents takes.
CREATE OR REPLACE FUNCTION sluice.send_signal(key text, payload jsonb, signal_id text) RETURNS jsonb
    LANGUAGE plpgsql
    AS $$
declare
  v_existing sluice.signals;
  v_run_ids uuid[];
  v_slugs text[];
  v_state sluice.step_states;
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

  perform sluice.lock_signal_keys(array[send_signal.key]);

  insert into sluice.signals (signal_id, signal_key, payload)
  values (send_signal.signal_id, send_signal.key, coalesce(send_signal.payload, 'null'::jsonb))
  on conflict on constraint signals_pkey do nothing;
  if not found then
    select * into v_existing from sluice.signals s where s.signal_id = send_signal.signal_id;
    if v_existing.signal_key <> send_signal.key then
      raise exception 'Cannot send signal "%" with key "%": that signal id was sent with key "%"',
        send_signal.signal_id, left(send_signal.key, 100), left(v_existing.signal_key, 100)
        using errcode = 'unique_violation';
    end if;
    return jsonb_build_object('signal_id', send_signal.signal_id, 'outcome', 'duplicate',
      'released', 0);
  end if;

  select array_agg(ss.run_id), array_agg(ss.step_slug) into v_run_ids, v_slugs
  from sluice.step_states ss
  where ss.status = 'waiting' and ss.wait_key = send_signal.key;

  if v_run_ids is not null then
    for v_state in select * from sluice.lock_run_steps(v_run_ids, v_slugs, false) loop
      continue when v_state.status <> 'waiting' or v_state.wait_key <> send_signal.key;
      update sluice.step_states ss set wait_signal_id = send_signal.signal_id
      where ss.run_id = v_state.run_id and ss.step_slug = v_state.step_slug;
      perform sluice.complete_step(v_state.run_id, v_state.flow_slug, v_state.step_slug,
        coalesce(send_signal.payload, 'null'::jsonb));
      v_released := v_released + 1;
      if not (v_state.run_id = any (v_runs)) then
        v_runs := v_runs || v_state.run_id;
      end if;
    end loop;
    foreach v_run in array v_runs loop
      perform sluice.start_ready_steps(v_run);
    end loop;
  end if;

  return jsonb_build_object('signal_id', send_signal.signal_id, 'outcome', 'sent',
    'released', v_released);
end;
$$;
