-- Bounded, single-use signals and schedules validated in SQL (issue 43, findings 3 and 4; issue
-- 50, finding 3). Every check here runs before anything is written, whatever client calls.
--
-- Signals (docs/waits.md#signals):
--   - A payload is at most the output limit (sluice.default_max_json_bytes(), 16 MiB as JSON, and
--     the waiting flow's own max_output_bytes when a step waits on the key now): SQLSTATE SLL01,
--     as every other size limit. It becomes a wait step's output, so the output limit is its limit.
--   - A signal is consumed by the waits it releases: send_signal releases every step waiting on
--     the key now; a signal no step waits for yet is kept (buffered) and the first wait that starts
--     on its key consumes it. A later wait on the same key needs a new signal.
--   - A kept signal only releases a wait of a run that was started before the signal was sent
--     (runs.started_at <= signals.sent_at, sent_at being the statement's clock time), unless the
--     wait step opts in (wait option accept_signals_sent_before_run): one approval never approves
--     a run that did not exist when it was given.
--   - A signal expires sluice.signal_lifetime() (7 days) after it was sent: an expired signal
--     releases nothing, and sluice.prune_data_older_than deletes it (and consumed signals older
--     than its retention). Idempotency by signal id holds while the signal is kept.
--   - The same signal id with another key raises SLS01 (detail: the id, the key given and the key
--     it was sent with), which the TypeScript client maps to SignalIdConflictError.
--
-- Schedules (docs/schedules.md): sluice.create_schedule checks the cron expression by croner's
-- own rules as sluice runs it (5 fields, or 6 with seconds first; names, ranges, steps, lists,
-- L, W, #, + and the @ nicknames; the rules are ported in sluice.cron_problem, and a test compares
-- the two parsers on thousands of expressions), at most sluice.max_cron_length() characters, the
-- time zone against pg_timezone_names, and the input against the run input limit. A schedule
-- whose next due time cannot be computed any more (its expression never fires again) is paused
-- with the reason in last_error by sluice.set_schedule_next_due, instead of being offered to every
-- heartbeat again; sluice.fire_due_schedules hands at most max_schedules awaiting schedules to
-- one sweep.
--
-- Redefined here (whole, create or replace): wait_options, validate_wait_step, begin_wait,
-- send_signal, create_schedule, fire_due_schedules, set_schedule_next_due, prune_data_older_than.
-- New: signal_lifetime, prune_signals, max_cron_length, cron_replace_names, cron_field_problem,
-- cron_problem.

-- How long a signal is kept after it was sent.
create function sluice.signal_lifetime()
returns interval
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$ select interval '7 days' $$;

alter table sluice.signals
  -- After this, the signal releases nothing and sluice.prune_data_older_than deletes it.
  add column expires_at timestamptz,
  -- When a wait consumed it (null: still buffered).
  add column consumed_at timestamptz;

-- Signals sent before this migration: they expire a lifetime after they were sent, and one that
-- released a wait is consumed.
update sluice.signals s
set expires_at = s.sent_at + sluice.signal_lifetime(),
  consumed_at = case when exists (
    select 1 from sluice.step_states ss where ss.wait_signal_id = s.signal_id
  ) then s.sent_at end;

alter table sluice.signals
  alter column expires_at set not null,
  alter column sent_at set default clock_timestamp();

-- begin_wait looks up a key's earliest buffered signal; prune finds expired and consumed ones.
drop index sluice.signals_key_idx;
create index signals_buffered_idx on sluice.signals (signal_key, sent_at)
  where consumed_at is null;
create index signals_expires_idx on sluice.signals (expires_at);
create index signals_consumed_idx on sluice.signals (consumed_at) where consumed_at is not null;

-- A wait step's options in the shape (null for a handler step), defaults filled in. A signal
-- wait that accepts signals sent before its run started carries accept_signals_sent_before_run
-- (only then: the shape of every other flow stays what it was).
create or replace function sluice.wait_options(step jsonb)
returns jsonb
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$
  select case step ->> 'step_type'
    when 'sleep' then '{}'::jsonb
    when 'signal' then jsonb_build_object(
      'timeout_seconds', coalesce(step #> '{wait,timeout_seconds}', 'null'::jsonb),
      'on_timeout', coalesce(step #>> '{wait,on_timeout}', 'fail'),
      'timeout_value', coalesce(step #> '{wait,timeout_value}', 'null'::jsonb))
      || case when step #> '{wait,accept_signals_sent_before_run}' = 'true'::jsonb
        then '{"accept_signals_sent_before_run": true}'::jsonb else '{}'::jsonb end
  end
$$;

-- As in 20261202000300, and a signal wait's accept_signals_sent_before_run is a boolean or absent.
create or replace function sluice.validate_wait_step(
  flow_slug text,
  step jsonb,
  earlier_slugs text[],
  earlier_types text[]
)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_slug text := step ->> 'step_slug';
  v_type text := step ->> 'step_type';
  v_dep text;
  v_dep_type text;
begin
  if v_type not in ('sleep', 'signal') then
    if coalesce(step -> 'wait', 'null'::jsonb) <> 'null'::jsonb then
      raise exception 'Invalid flow definition: step "%" of flow "%" is a % step, which takes no wait options, got %',
        v_slug, flow_slug, v_type, step -> 'wait'
        using errcode = 'invalid_parameter_value';
    end if;
    return;
  end if;
  if jsonb_array_length(step -> 'deps') <> 1 then
    raise exception 'Invalid flow definition: % step "%" of flow "%" must depend on exactly one step, got deps %',
      v_type, v_slug, flow_slug, step -> 'deps'
      using errcode = 'invalid_parameter_value';
  end if;
  v_dep := step -> 'deps' ->> 0;
  v_dep_type := earlier_types[array_position(earlier_slugs, v_dep)];
  if v_dep_type is distinct from 'single' then
    raise exception 'Invalid flow definition: % step "%" of flow "%" depends on "%", a % step; a wait depends on one single handler step (its worker computes the wait)',
      v_type, v_slug, flow_slug, v_dep, v_dep_type
      using errcode = 'invalid_parameter_value';
  end if;
  if coalesce(step -> 'required_input_pattern', 'null'::jsonb) <> 'null'::jsonb
    or coalesce(step -> 'forbidden_input_pattern', 'null'::jsonb) <> 'null'::jsonb
  then
    raise exception 'Invalid flow definition: % step "%" of flow "%" cannot have a condition',
      v_type, v_slug, flow_slug
      using errcode = 'invalid_parameter_value';
  end if;
  if v_type = 'signal' then
    perform sluice.check_whole_number(step #> '{wait,timeout_seconds}', 1,
      format('wait.timeout_seconds of step "%s"', v_slug));
    perform sluice.check_enum(coalesce(step #> '{wait,on_timeout}', '"fail"'::jsonb),
      array['fail', 'skip', 'value'], format('wait.on_timeout of step "%s"', v_slug));
    if coalesce(jsonb_typeof(step #> '{wait,accept_signals_sent_before_run}'), 'boolean')
      <> 'boolean'
    then
      raise exception 'Invalid flow definition: wait.accept_signals_sent_before_run of step "%" of flow "%" must be a boolean, got %',
        v_slug, flow_slug, step #> '{wait,accept_signals_sent_before_run}'
        using errcode = 'invalid_parameter_value';
    end if;
  elsif coalesce(step -> 'wait', 'null'::jsonb) not in ('null'::jsonb, '{}'::jsonb) then
    raise exception 'Invalid flow definition: sleep step "%" of flow "%" takes no wait options, got %',
      v_slug, flow_slug, step -> 'wait'
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;

-- Starts a ready wait step (called by sluice.start_ready_steps, which holds the run's lock):
-- a wait whose dependency was skipped is skipped (it has nothing to wait on; its dependents see
-- it absent), a sleep whose due time has passed completes at once with it, a signal wait whose
-- key has a buffered signal completes at once with the earliest one's payload and consumes it,
-- and any other wait moves to 'waiting' (step:waiting) with its key and due time. A buffered
-- signal counts when it is not consumed, not expired, no larger than the flow's output limit, and
-- was sent after the run started (or the step accepts signals sent before its run). The caller's
-- loop starts what a completion here releases.
create or replace function sluice.begin_wait(
  run_id uuid,
  flow_slug text,
  step_slug text,
  step_type text,
  deps_count integer,
  wait_options jsonb
)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
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

-- Sends a signal: records it (idempotent by signal_id while it is kept) and completes every step
-- waiting on the key now with the payload, starting their dependents, in the caller's
-- transaction; the signal is then consumed. A signal no step waits for yet is buffered for
-- sluice.signal_lifetime() (sluice.begin_wait). Refused before anything is written: a key or id
-- that is not 1 to 1000 characters (invalid_parameter_value), a payload over the output limit
-- (SLL01, detail {limit, size, max}: the default limit, or the smaller max_output_bytes of a flow
-- with a step waiting on the key), a signal id sent before with another key (SLS01, detail
-- {signal_id, key, existing_key}).
create or replace function sluice.send_signal(key text, payload jsonb, signal_id text)
returns jsonb
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
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

-- Raises SLS01 when `existing` (the stored signal of a signal id) was sent with another key than
-- `key`; the same key is a duplicate, which the caller answers.
create function sluice.signal_id_taken(existing sluice.signals, key text)
returns void
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
begin
  if existing.signal_key <> signal_id_taken.key then
    raise exception 'Cannot send signal "%" with key "%": that signal id was sent with key "%"',
      left(existing.signal_id, 100), left(signal_id_taken.key, 100),
      left(existing.signal_key, 100)
      using errcode = 'SLS01',
        detail = json_build_object('signal_id', existing.signal_id, 'key', signal_id_taken.key,
          'existing_key', existing.signal_key)::text,
        hint = 'A signal id names one signal: use a new id for another key (include the key in the id)';
  end if;
end;
$$;

-- Deletes the signals that expired, and the consumed ones consumed before `cutoff`. Returns how
-- many it deleted.
create function sluice.prune_signals(cutoff timestamptz)
returns integer
language sql
set search_path = pg_catalog, pg_temp
as $$
  with pruned as (
    delete from sluice.signals s
    where s.expires_at <= now() or s.consumed_at < prune_signals.cutoff
    returning 1
  )
  select count(*)::integer from pruned;
$$;

-- As in 20261130001200, and it prunes signals (sluice.prune_signals): `result` is {runs, workers,
-- signals}. A procedure that commits cannot have a SET clause (PostgreSQL refuses transaction
-- control in one), so instead of a pinned search_path every name here is schema-qualified,
-- pg_catalog's included.
create or replace procedure sluice.prune_data_older_than(
  retention interval,
  batch_size integer default 1000,
  inout result jsonb default null
)
language plpgsql
as $$
declare
  v_cutoff timestamptz;
  v_runs bigint := 0;
  v_batch integer;
  v_workers integer;
  v_signals integer;
begin
  if retention is null or retention < interval '0' then
    raise exception 'Cannot prune: retention must be a non-negative interval, got %',
      coalesce(retention::pg_catalog.text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if batch_size is null or batch_size < 1 then
    raise exception 'Cannot prune: batch_size must be a positive integer, got %',
      coalesce(batch_size::pg_catalog.text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  -- Fixed once: now() moves with every batch's transaction.
  v_cutoff := pg_catalog.now() operator(pg_catalog.-) retention;

  loop
    v_batch := sluice.prune_runs_batch(v_cutoff, batch_size);
    v_runs := v_runs + v_batch;
    commit;
    exit when v_batch < batch_size;
  end loop;

  with pruned as (
    delete from sluice.workers w where w.stopped_at operator(pg_catalog.<) v_cutoff returning 1
  )
  select pg_catalog.count(*) into v_workers from pruned;
  v_signals := sluice.prune_signals(v_cutoff);

  result := pg_catalog.jsonb_build_object('runs', v_runs, 'workers', v_workers,
    'signals', v_signals);
end;
$$;

-- The longest cron expression a schedule takes.
create function sluice.max_cron_length()
returns integer
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$ select 1000 $$;

-- croner's replaceAlpha: replaces each of `names` (lowercase, matched case-insensitively, in
-- order) in a month or day-of-week field by its number. Null when a name does not stand alone
-- (a letter, digit, '/' or '#' before it; a letter other than L or a digit after it).
create function sluice.cron_replace_names(field text, names text[], numbers text[])
returns text
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_field text := cron_replace_names.field;
  v_lower text;
  v_result text;
  v_name text;
  v_at integer;
  v_found integer;
  v_start integer;
  i integer;
begin
  for i in 1 .. cardinality(cron_replace_names.names) loop
    v_name := cron_replace_names.names[i];
    v_lower := translate(v_field, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz');
    v_result := '';
    v_at := 1;
    loop
      v_found := strpos(substr(v_lower, v_at), v_name);
      exit when v_found = 0;
      v_found := v_at + v_found - 1;
      -- Where the three letters of the name start ('-sun' has a dash first).
      v_start := v_found + char_length(v_name) - 3;
      if (v_start > 1 and substr(v_field, v_start - 1, 1) ~ '[A-Za-z0-9/#]')
        or substr(v_field, v_start + 3, 1) ~ '[A-Ka-km-zM-Z0-9]'
      then
        return null;
      end if;
      v_result := v_result || substr(v_field, v_at, v_found - v_at)
        || cron_replace_names.numbers[i];
      v_at := v_found + char_length(v_name);
    end loop;
    v_field := v_result || substr(v_field, v_at);
  end loop;
  return v_field;
end;
$$;

-- croner's partToArray for field `field` (0 second, 1 minute, 2 hour, 3 day of month, 4 month,
-- 5 day of week) after names were replaced: what is wrong with `part`, or null. `day_special`: the
-- day-of-month field had L or LW, so it may be empty.
create function sluice.cron_field_problem(field integer, part text, day_special boolean)
returns text
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_name text := (array['second', 'minute', 'hour', 'day-of-month', 'month',
    'day-of-week'])[field + 1];
  -- Values are indexes: days and months count from 0 (offset -1).
  v_offset integer := (array[0, 0, 0, -1, -1, 0])[field + 1];
  v_length integer := (array[60, 60, 24, 31, 12, 7])[field + 1];
  -- The highest index (day of week 7 is Sunday, as 0).
  v_max integer := (array[59, 59, 23, 30, 11, 7])[field + 1];
  v_part text := cron_field_problem.part;
  v_item text;
  v_problem text;
  v_base text;
  v_nth text;
  v_bits text[];
  v_low numeric;
  v_high numeric;
  v_step numeric;
begin
  if v_part = '' then
    if field = 3 and day_special then
      return null;
    end if;
    return format('the %s field is empty', v_name);
  end if;
  if v_part = '*' then
    return null;
  end if;
  if strpos(v_part, ',') > 0 then
    foreach v_item in array string_to_array(v_part, ',') loop
      v_problem := sluice.cron_field_problem(field, v_item, day_special);
      if v_problem is not null then
        return v_problem;
      end if;
    end loop;
    return null;
  end if;
  if strpos(upper(v_part), 'W') > 0 and (strpos(v_part, '-') > 0 or strpos(v_part, '/') > 0) then
    return format('W is not allowed in a range or a step (%s)', v_part);
  end if;

  v_base := v_part;
  if strpos(v_part, '#') > 0 then
    v_bits := string_to_array(v_part, '#');
    if cardinality(v_bits) <> 2 or v_bits[2] = '' then
      return format('illegal nth weekday %s', v_part);
    end if;
    v_base := v_bits[1];
    v_nth := v_bits[2];
  elsif upper(right(v_part, 1)) = 'L' then
    if field <> 5 then
      return format('L is allowed alone in the day-of-month field and after a weekday, got %s',
        v_part);
    end if;
    v_base := left(v_part, -1);
    v_nth := 'L';
  end if;
  if v_nth is not null and upper(v_nth) <> 'L'
    and not (v_nth ~ '^[0-9]+$' and v_nth::numeric between 1 and 5)
  then
    return format('the nth weekday must be 1 to 5 or L, got %s', v_part);
  end if;

  if strpos(v_part, '-') > 0 and strpos(v_part, '/') > 0 then
    v_bits := regexp_match(v_base, '^([0-9]+)-([0-9]+)/([0-9]+)$');
    if v_bits is null then
      return format('illegal range with a step %s', v_part);
    end if;
    v_low := v_bits[1]::numeric + v_offset;
    v_high := v_bits[2]::numeric + v_offset;
    v_step := v_bits[3]::numeric;
    if v_low > v_high then
      return format('the range %s starts after it ends', v_part);
    elsif v_step = 0 then
      return format('the step of %s is 0', v_part);
    elsif v_step > v_length then
      return format('the step of %s is larger than the %s field''s %s values', v_part, v_name,
        v_length);
    end if;
    -- The values set: v_low, v_low + step, ... up to v_high.
    v_high := v_low + floor((v_high - v_low) / v_step) * v_step;
  elsif strpos(v_part, '-') > 0 then
    v_bits := string_to_array(v_base, '-');
    if cardinality(v_bits) <> 2 or v_bits[1] !~ '^[0-9]+$' or v_bits[2] !~ '^[0-9]+$' then
      return format('illegal range %s', v_part);
    end if;
    v_low := v_bits[1]::numeric + v_offset;
    v_high := v_bits[2]::numeric + v_offset;
    if v_low > v_high then
      return format('the range %s starts after it ends', v_part);
    end if;
  elsif strpos(v_part, '/') > 0 then
    v_bits := string_to_array(v_base, '/');
    if cardinality(v_bits) <> 2 then
      return format('illegal step %s', v_part);
    elsif v_bits[1] <> '*' then
      return format('a step needs * or a range before it (*/n, a-b/n), got %s', v_part);
    elsif v_bits[2] !~ '^[0-9]+$' then
      return format('illegal step %s', v_part);
    end if;
    v_step := v_bits[2]::numeric;
    if v_step = 0 then
      return format('the step of %s is 0', v_part);
    elsif v_step > v_length then
      return format('the step of %s is larger than the %s field''s %s values', v_part, v_name,
        v_length);
    end if;
    return null;
  else
    if strpos(upper(v_base), 'W') > 0 then
      if field <> 3 then
        return format('W is allowed in the day-of-month field only, got %s', v_part);
      end if;
      v_base := regexp_replace(v_base, '[Ww]$', '');
    end if;
    if v_base !~ '^[0-9]+$' then
      return format('%s is not a number', v_part);
    end if;
    v_low := v_base::numeric + v_offset;
    v_high := v_low;
  end if;
  if v_low < 0 or v_high > v_max then
    return format('%s is out of range for the %s field (%s to %s)', v_part, v_name,
      -v_offset, v_max - v_offset);
  end if;
  return null;
end;
$$;

-- What is wrong with a cron expression as sluice's croner reads it (src/dsl/schedule_times.ts:
-- 5 fields, or 6 with seconds first), or null when croner accepts it. A port of croner 11's
-- CronPattern.parse; tests/sql/schedule_validation_test.ts runs both on the same expressions.
-- Whether the expression ever fires is not checked here (croner searches for that).
create function sluice.cron_problem(cron text)
returns text
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_cron text := cron_problem.cron;
  v_nickname text;
  v_parts text[];
  v_items text[];
  v_day_special boolean := false;
  v_replaced text;
  v_problem text;
  i integer;
begin
  if v_cron is null then
    return 'the expression is null';
  end if;
  if char_length(v_cron) > sluice.max_cron_length() then
    return format('the expression is %s characters, more than the limit of %s',
      char_length(v_cron), sluice.max_cron_length());
  end if;
  if v_cron ~ '[^ -~]' then
    return 'only printable ASCII characters and spaces are allowed';
  end if;
  if btrim(v_cron) = '' then
    return 'the expression is empty';
  end if;
  if strpos(v_cron, ':') > 0 then
    return 'a date and time (it has ":") is not a cron expression';
  end if;
  if strpos(v_cron, '@') > 0 then
    v_nickname := lower(btrim(v_cron));
    if v_nickname = '@reboot' then
      return '@reboot is not supported';
    end if;
    v_cron := btrim(coalesce((jsonb_build_object(
      '@yearly', '0 0 1 1 *', '@annually', '0 0 1 1 *', '@monthly', '0 0 1 * *',
      '@weekly', '0 0 * * SUN', '@daily', '0 0 * * *', '@midnight', '0 0 * * *',
      '@hourly', '0 * * * *')) ->> v_nickname, v_cron));
  end if;
  v_parts := regexp_split_to_array(btrim(v_cron), ' +');
  if cardinality(v_parts) not in (5, 6) then
    return format('expected 5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first, got %s',
      cardinality(v_parts));
  end if;
  if cardinality(v_parts) = 5 then
    v_parts := array['0'] || v_parts;
  end if;
  for i in 1 .. 6 loop
    v_parts[i] := replace(v_parts[i], '?', '*');
  end loop;

  if upper(v_parts[4]) = 'LW' then
    v_day_special := true;
    v_parts[4] := '';
  elsif strpos(upper(v_parts[4]), 'L') > 0 then
    v_items := string_to_array(v_parts[4], ',');
    if cardinality(v_items) > 1 and 'LW' = any (
      select upper(x) from unnest(v_items) as x
    ) then
      return format('LW cannot be in a list in the day-of-month field (%s)', v_parts[4]);
    end if;
    if exists (
      select 1 from unnest(v_items) as x where x = '' or (upper(x) <> 'L' and x ~* 'l')
    ) then
      return format('L must stand alone in the day-of-month field (%s)', v_parts[4]);
    end if;
    v_parts[4] := coalesce((
      select string_agg(x, ',' order by n) from unnest(v_items) with ordinality as u(x, n)
      where upper(x) <> 'L'
    ), '');
    v_day_special := true;
  end if;

  if char_length(v_parts[5]) >= 3 then
    v_replaced := sluice.cron_replace_names(v_parts[5],
      array['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'],
      array['1', '2', '3', '4', '5', '6', '7', '8', '9', '10', '11', '12']);
    if v_replaced is null then
      return format('a month name must stand alone (%s)', v_parts[5]);
    end if;
    v_parts[5] := v_replaced;
  end if;
  if char_length(v_parts[6]) >= 3 then
    v_replaced := sluice.cron_replace_names(v_parts[6],
      array['-sun', 'sun', 'mon', 'tue', 'wed', 'thu', 'fri', 'sat'],
      array['-7', '0', '1', '2', '3', '4', '5', '6']);
    if v_replaced is null then
      return format('a day name must stand alone (%s)', v_parts[6]);
    end if;
    v_parts[6] := v_replaced;
  end if;
  if left(v_parts[6], 1) = '+' then
    v_parts[6] := substr(v_parts[6], 2);
    if v_parts[6] = '' then
      return 'the day-of-week field is empty after +';
    end if;
  end if;

  for i in 1 .. 6 loop
    if v_parts[i] ~ (array['[^/*0-9,-]', '[^/*0-9,-]', '[^/*0-9,-]', '[^/*0-9,WwLl-]',
      '[^/*0-9,-]', '[^/*0-9,#Ll-]'])[i]
    then
      return format('the %s field (%s) has characters it does not allow',
        (array['second', 'minute', 'hour', 'day-of-month', 'month', 'day-of-week'])[i],
        v_parts[i]);
    end if;
  end loop;
  for i in 1 .. 6 loop
    v_problem := sluice.cron_field_problem(i - 1, v_parts[i], v_day_special);
    if v_problem is not null then
      return v_problem;
    end if;
  end loop;
  return null;
end;
$$;

-- As in 20261202000200, and the cron expression (sluice.cron_problem, at most
-- sluice.max_cron_length() characters), the time zone (pg_timezone_names) and the input (the run
-- input limit: the flow's max_input_bytes, or the default for an alias, which may move) are
-- checked before anything is written.
create or replace function sluice.create_schedule(
  schedule_name text,
  target_kind text,
  target text,
  input jsonb,
  cron text,
  timezone text,
  missed text,
  next_due_at timestamptz,
  following_due_at timestamptz,
  created_at timestamptz default clock_timestamp()
)
returns sluice.schedules
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  v_row sluice.schedules;
  v_problem text;
  v_bytes bigint;
  v_max_bytes integer;
begin
  if create_schedule.schedule_name is null or not sluice.is_valid_slug(create_schedule.schedule_name) then
    raise exception 'Cannot create schedule "%": a schedule name starts with a letter and holds letters, digits and single underscores',
      left(create_schedule.schedule_name, 200) using errcode = 'invalid_parameter_value';
  end if;
  if create_schedule.target_kind is distinct from 'flow' and create_schedule.target_kind is distinct from 'alias' then
    raise exception 'Cannot create schedule "%": target kind must be flow or alias, got %',
      create_schedule.schedule_name, coalesce(left(create_schedule.target_kind, 100), 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if create_schedule.missed is distinct from 'run-once' and create_schedule.missed is distinct from 'skip' then
    raise exception 'Cannot create schedule "%": missed must be run-once or skip, got %',
      create_schedule.schedule_name, coalesce(left(create_schedule.missed, 100), 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if create_schedule.input is null then
    raise exception 'Cannot create schedule "%": input is null; pass a JSON value',
      create_schedule.schedule_name using errcode = 'null_value_not_allowed';
  end if;
  if create_schedule.next_due_at is null or create_schedule.cron is null
    or create_schedule.timezone is null then
    raise exception 'Cannot create schedule "%": cron, timezone and the next due time are required',
      create_schedule.schedule_name using errcode = 'null_value_not_allowed';
  end if;
  v_problem := sluice.cron_problem(create_schedule.cron);
  if v_problem is not null then
    raise exception 'Cannot create schedule "%": invalid cron expression %: %',
      create_schedule.schedule_name, left(create_schedule.cron, 100), v_problem
      using errcode = 'invalid_parameter_value',
        hint = '5 fields (minute hour day-of-month month day-of-week), or 6 with seconds first, as croner reads them';
  end if;
  if not exists (
    select 1 from pg_catalog.pg_timezone_names z where z.name = create_schedule.timezone
  ) then
    raise exception 'Cannot create schedule "%": unknown time zone "%"',
      create_schedule.schedule_name, left(create_schedule.timezone, 100)
      using errcode = 'invalid_parameter_value',
        hint = 'An IANA time zone name such as UTC, Europe/Berlin or America/New_York (pg_timezone_names lists them)';
  end if;
  if create_schedule.target_kind = 'flow' and not exists (
    select 1 from sluice.flows f where f.flow_slug = create_schedule.target
  ) then
    raise exception 'Cannot create schedule "%": no flow "%"', create_schedule.schedule_name,
      left(create_schedule.target, 200) using errcode = 'no_data_found',
        hint = 'A flow exists once a worker for it has started and compiled it';
  end if;
  if create_schedule.target_kind = 'alias' and not exists (
    select 1 from sluice.aliases a where a.alias = create_schedule.target
  ) then
    raise exception 'Cannot create schedule "%": no alias "%"', create_schedule.schedule_name,
      left(create_schedule.target, 200) using errcode = 'no_data_found',
        hint = 'Every compiled flow has an alias of its own name; activate_alias creates others';
  end if;
  v_max_bytes := coalesce((
    select f.opt_max_input_bytes from sluice.flows f
    where create_schedule.target_kind = 'flow' and f.flow_slug = create_schedule.target
  ), sluice.default_max_json_bytes());
  v_bytes := octet_length(create_schedule.input::text);
  if v_bytes > v_max_bytes then
    raise exception 'Cannot create schedule "%": the input is % bytes as JSON, more than the limit of % bytes (max_input_bytes)',
      create_schedule.schedule_name, v_bytes, v_max_bytes
      using errcode = 'SLL01', detail = json_build_object('limit', 'max_input_bytes',
        'size', v_bytes, 'max', v_max_bytes)::text;
  end if;
  insert into sluice.schedules (schedule_name, target_kind, target, input, cron, timezone, missed,
    next_due_at, following_due_at, advanced_at, created_at)
  values (create_schedule.schedule_name, create_schedule.target_kind, create_schedule.target,
    create_schedule.input, create_schedule.cron, create_schedule.timezone, create_schedule.missed,
    create_schedule.next_due_at, create_schedule.following_due_at, create_schedule.created_at,
    create_schedule.created_at)
  on conflict on constraint schedules_pkey do nothing
  returning * into v_row;
  if v_row.schedule_name is null then
    raise exception 'Cannot create schedule "%": a schedule of that name exists',
      create_schedule.schedule_name using errcode = 'unique_violation',
        hint = 'Delete it first, or choose another name';
  end if;
  return v_row;
end;
$$;

-- As in 20261202000200, except that it returns at most max_schedules of the schedules awaiting
-- their next due time (the ones it fired first, then by name), so one sweep computes a bounded
-- number of due times.
create or replace function sluice.fire_due_schedules(
  now timestamptz default clock_timestamp(),
  max_schedules integer default 100
)
returns table (
  schedule_name text,
  cron text,
  timezone text,
  advanced_at timestamptz,
  fired boolean
)
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  v_schedule sluice.schedules;
  v_overtaken boolean;
  v_inserted boolean;
  v_run_id uuid;
  v_error text;
  v_fired text[] := '{}';
begin
  if fire_due_schedules.now is null then
    raise exception 'Cannot fire schedules: now is null' using errcode = 'null_value_not_allowed';
  end if;
  for v_schedule in
    select s.* from sluice.schedules s
    where s.paused_at is null and s.next_due_at <= fire_due_schedules.now
    order by s.next_due_at, s.schedule_name
    limit greatest(fire_due_schedules.max_schedules, 1)
    for update of s skip locked
  loop
    v_overtaken := v_schedule.following_due_at is not null
      and v_schedule.following_due_at <= fire_due_schedules.now;
    v_run_id := null;
    v_error := null;
    v_inserted := null;
    if not (v_overtaken and v_schedule.missed = 'skip') then
      insert into sluice.schedule_ticks as t (schedule_name, due_at, fired_at, catch_up)
      values (v_schedule.schedule_name, v_schedule.next_due_at, fire_due_schedules.now, v_overtaken)
      on conflict do nothing
      returning true into v_inserted;
      if v_inserted then
        begin
          if v_schedule.target_kind = 'alias' then
            v_run_id := sluice.start_flow(v_schedule.target, v_schedule.input);
          else
            v_run_id := sluice.start_flow_version(v_schedule.target, v_schedule.input);
          end if;
        exception when others then
          -- A transient failure (serialization or deadlock, insufficient resources, a lock not
          -- available) fails the whole firing, so the next sweep fires the tick again.
          if sqlstate like '40%' or sqlstate like '53%' or sqlstate = '55P03' then
            raise;
          end if;
          -- Otherwise the subtransaction undid the half-started run; the tick stays fired, with
          -- its error.
          v_error := sqlerrm;
        end;
        update sluice.schedule_ticks t set run_id = v_run_id, error = v_error
        where t.schedule_name = v_schedule.schedule_name and t.due_at = v_schedule.next_due_at;
        v_fired := v_fired || v_schedule.schedule_name;
        -- Keep the latest ticks only (a per-second schedule would otherwise grow by 86400 rows a
        -- day). An older tick never comes due again: due times are computed after advanced_at,
        -- which only moves forward.
        delete from sluice.schedule_ticks t
        where t.schedule_name = v_schedule.schedule_name and t.due_at < (
          select k.due_at from sluice.schedule_ticks k
          where k.schedule_name = v_schedule.schedule_name
          order by k.due_at desc offset sluice.schedule_ticks_kept() - 1 limit 1
        );
      end if;
    end if;
    update sluice.schedules s set
      next_due_at = null,
      following_due_at = null,
      advanced_at = greatest(s.advanced_at, fire_due_schedules.now),
      last_fired_at = case when v_inserted then fire_due_schedules.now else s.last_fired_at end,
      last_run_id = coalesce(v_run_id, s.last_run_id),
      last_error = case when v_inserted then v_error else s.last_error end
    where s.schedule_name = v_schedule.schedule_name;
  end loop;

  return query
    select s.schedule_name, s.cron, s.timezone, s.advanced_at,
      s.schedule_name = any(v_fired)
    from sluice.schedules s
    where s.paused_at is null and s.next_due_at is null
    order by s.schedule_name = any(v_fired) desc, s.schedule_name
    limit greatest(fire_due_schedules.max_schedules, 1)
    for update of s skip locked;
end;
$$;

-- Stores next due times computed by the Deno side: `due` is a JSON array of
-- {schedule_name, advanced_at, next_due_at, following_due_at}, or {schedule_name, advanced_at,
-- problem} for a schedule whose next due time cannot be computed (its expression never fires
-- again, or no longer parses): that one is paused, with the problem as its last_error, so no
-- sweep computes it again until it is resumed. Each applies only while the schedule still awaits
-- it from that same advanced_at (a compare-and-set: a due time computed from an older state, or
-- for a deleted or paused schedule, changes nothing). Returns how many were stored or paused.
create or replace function sluice.set_schedule_next_due(due jsonb)
returns integer
language sql
set search_path = pg_catalog, pg_temp
as $$
  with given as (
    select d.schedule_name, d.advanced_at, d.next_due_at, d.following_due_at,
      left(d.problem, 1000) as problem
    from jsonb_to_recordset(coalesce(set_schedule_next_due.due, '[]'::jsonb)) as d(
      schedule_name text, advanced_at timestamptz, next_due_at timestamptz,
      following_due_at timestamptz, problem text)
    where d.next_due_at is not null or d.problem is not null
  ),
  stored as (
    update sluice.schedules s set
      next_due_at = g.next_due_at,
      following_due_at = case when g.next_due_at is null then null else g.following_due_at end,
      paused_at = case when g.next_due_at is null then clock_timestamp() else s.paused_at end,
      last_error = case when g.next_due_at is null
        then 'paused: ' || g.problem else s.last_error end
    from given g
    where s.schedule_name = g.schedule_name and s.advanced_at = g.advanced_at
      and s.next_due_at is null and s.paused_at is null
    returning s.schedule_name
  )
  select count(*)::integer from stored;
$$;

-- As every migration since 20261130001500: nothing here is executable or readable by PUBLIC.
revoke all on all routines in schema sluice from public;
revoke all on sluice.signals from public;
