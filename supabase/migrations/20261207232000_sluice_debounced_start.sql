-- Debounced starts (issue 46, docs/flow_control.md#debounced-starts): starts of one name with the
-- same debounce key collapse into one run, started with the last start's input once no start of
-- that key came for the debounce window (the trailing edge; each start restarts the window, and
-- an optional max_wait_seconds caps how long the first start can be pushed back).
--
-- A pending debounced start is one row of sluice.debounced_starts, keyed like an idempotency key
-- by (flow_ref, debounce_key). A start upserts it (`insert ... on conflict do update`): concurrent
-- starts of one key serialize on that row's lock, each update sees the previous one committed, so
-- the row holds the input of the start that committed last; a rolled-back start leaves the row as
-- it was (or no row). The row's run_id is chosen by the first start and returned by every start
-- that joins it: the eventual run's id. The worker's heartbeat sweep
-- (sluice.start_due_debounced, next to release_due_waits) deletes each due row and creates its
-- run in the same transaction; a start racing the sweep waits for the row's lock and, the row
-- deleted, begins the next pending start (a new run id).
--
-- Lock order: a start locks its debounced_starts row, then (create_run, in the sweep only) the
-- flow's start lock. The sweep takes rows with skip locked: it never waits for a start.
--
-- Routines redefined: check_start_options (accepts `debounce`), start_with_options (branches to
-- start_debounced). New: debounced_starts, check_debounce_option, check_run_input,
-- start_debounced, start_due_debounced, max_debounce_seconds.

create table sluice.debounced_starts (
  flow_ref text not null,
  debounce_key text not null,
  flow_slug text not null,
  run_id uuid not null,
  input jsonb not null,
  traceparent text,
  starts integer not null default 1 check (starts >= 1),
  first_at timestamptz not null default clock_timestamp(),
  last_at timestamptz not null default clock_timestamp(),
  due_at timestamptz not null,
  max_due_at timestamptz,
  error_message text,
  primary key (flow_ref, debounce_key)
);

comment on table sluice.debounced_starts is
  'Pending debounced starts, one per name started and debounce key: the run is created with input when due_at passes (sluice.start_due_debounced).';
comment on column sluice.debounced_starts.run_id is
  'The id of the run this pending start creates, returned to every start that joined it.';
comment on column sluice.debounced_starts.starts is
  'How many starts joined this pending start (the first included).';
comment on column sluice.debounced_starts.max_due_at is
  'The latest due time: first_at + max_wait_seconds of the first start, or null (no cap).';
comment on column sluice.debounced_starts.error_message is
  'Why creating the run failed when it was due (e.g. the flow was deleted); such a row is not retried, and the next start of its key replaces it.';

-- waitForRun finds a pending run by its id.
create unique index debounced_starts_run_id_key on sluice.debounced_starts (run_id);
-- The sweep reads due rows in due order.
create index debounced_starts_due_idx on sluice.debounced_starts (due_at)
  where error_message is null;

-- The longest debounce window (and max wait), in seconds: 7 days.
create function sluice.max_debounce_seconds()
returns integer
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$ select 604800 $$;

-- Validates the `debounce` start option, naming the offending value: an object
-- {key, window_seconds, max_wait_seconds?} with a key of 1 to 255 characters, a window of 1 to
-- max_debounce_seconds() whole seconds and a max wait of window_seconds to the same maximum.
create function sluice.check_debounce_option(flow_ref text, debounce jsonb)
returns void
language plpgsql
immutable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_unknown text;
  v_key jsonb := check_debounce_option.debounce -> 'key';
  v_window jsonb := check_debounce_option.debounce -> 'window_seconds';
  v_max jsonb := check_debounce_option.debounce -> 'max_wait_seconds';
begin
  if jsonb_typeof(check_debounce_option.debounce) is distinct from 'object' then
    raise exception 'Cannot start flow "%": debounce must be a JSON object {key, window_seconds}, got %',
      check_debounce_option.flow_ref, coalesce(jsonb_typeof(check_debounce_option.debounce), 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  select k into v_unknown
  from jsonb_object_keys(check_debounce_option.debounce) k
  where k not in ('key', 'window_seconds', 'max_wait_seconds')
  order by k
  limit 1;
  if v_unknown is not null then
    raise exception 'Cannot start flow "%": unknown debounce option "%"',
      check_debounce_option.flow_ref, v_unknown
      using errcode = 'invalid_parameter_value',
        hint = 'Known options: key, window_seconds, max_wait_seconds';
  end if;
  if jsonb_typeof(v_key) is distinct from 'string'
    or length(v_key #>> '{}') not between 1 and sluice.max_idempotency_key_length()
  then
    raise exception 'Cannot start flow "%": debounce.key must be a string of 1 to % characters, got %',
      check_debounce_option.flow_ref, sluice.max_idempotency_key_length(),
      coalesce(left(v_key::text, 80), 'nothing')
      using errcode = 'invalid_parameter_value';
  end if;
  if jsonb_typeof(v_window) is distinct from 'number'
    or (v_window #>> '{}')::numeric <> trunc((v_window #>> '{}')::numeric)
    or (v_window #>> '{}')::numeric not between 1 and sluice.max_debounce_seconds()
  then
    raise exception 'Cannot start flow "%": debounce.window_seconds must be a whole number of seconds from 1 to %, got %',
      check_debounce_option.flow_ref, sluice.max_debounce_seconds(),
      coalesce(left(v_window::text, 80), 'nothing')
      using errcode = 'invalid_parameter_value';
  end if;
  if v_max is not null and (jsonb_typeof(v_max) <> 'number'
    or (v_max #>> '{}')::numeric <> trunc((v_max #>> '{}')::numeric)
    or (v_max #>> '{}')::numeric not between (v_window #>> '{}')::numeric
      and sluice.max_debounce_seconds())
  then
    raise exception 'Cannot start flow "%": debounce.max_wait_seconds must be a whole number of seconds from window_seconds (%) to %, got %',
      check_debounce_option.flow_ref, v_window #>> '{}', sluice.max_debounce_seconds(),
      left(v_max::text, 80)
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;

-- Validates the options of a start before anything is written, naming the offending value:
-- options is a JSON object (or null) of known keys only. As in migration 20261207001300, and
-- `debounce` (check_debounce_option), which takes neither an idempotency key nor a run id.
create or replace function sluice.check_start_options(flow_ref text, options jsonb)
returns void
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_unknown text;
  v_key jsonb := check_start_options.options -> 'idempotency_key';
begin
  if check_start_options.options is null then
    return;
  end if;
  if jsonb_typeof(check_start_options.options) <> 'object' then
    raise exception 'Cannot start flow "%": options must be a JSON object, got %',
      check_start_options.flow_ref, jsonb_typeof(check_start_options.options)
      using errcode = 'invalid_parameter_value';
  end if;
  select k into v_unknown
  from jsonb_object_keys(check_start_options.options) k
  where k not in ('idempotency_key', 'debounce')
  order by k
  limit 1;
  if v_unknown is not null then
    raise exception 'Cannot start flow "%": unknown start option "%"',
      check_start_options.flow_ref, v_unknown
      using errcode = 'invalid_parameter_value', hint = 'Known options: idempotency_key, debounce';
  end if;
  if v_key is not null and jsonb_typeof(v_key) <> 'null' and (jsonb_typeof(v_key) <> 'string'
      or length(v_key #>> '{}') not between 1 and sluice.max_idempotency_key_length())
  then
    raise exception 'Cannot start flow "%": idempotency_key must be a string of 1 to % characters, got %',
      check_start_options.flow_ref, sluice.max_idempotency_key_length(), left(v_key::text, 80)
      using errcode = 'invalid_parameter_value';
  end if;
  if check_start_options.options ? 'debounce' then
    perform sluice.check_debounce_option(check_start_options.flow_ref,
      check_start_options.options -> 'debounce');
    if v_key is not null and jsonb_typeof(v_key) <> 'null' then
      raise exception 'Cannot start flow "%": debounce and idempotency_key cannot be combined',
        check_start_options.flow_ref
        using errcode = 'invalid_parameter_value',
          hint = 'A debounced start already returns the pending run of its key';
    end if;
  end if;
end;
$$;

-- Refuses an input create_run would refuse for the concrete flow `flow_slug` (null, over the
-- flow's max_input_bytes, not an array for a root map), with create_run's errors: a debounced
-- start checks its input when it is made, not only when its run is created.
create function sluice.check_run_input(flow_slug text, input jsonb)
returns void
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_max_bytes integer;
  v_bytes bigint;
  v_root_map text;
begin
  if check_run_input.input is null then
    raise exception 'Cannot start flow "%": input is null; pass a JSON value', check_run_input.flow_slug
      using errcode = 'null_value_not_allowed';
  end if;
  select f.opt_max_input_bytes into v_max_bytes
  from sluice.flows f where f.flow_slug = check_run_input.flow_slug;
  v_bytes := octet_length(check_run_input.input::text);
  if v_bytes > v_max_bytes then
    raise exception 'Cannot start flow "%": the input is % bytes as JSON, more than the limit of % bytes (max_input_bytes)',
      check_run_input.flow_slug, v_bytes, v_max_bytes
      using errcode = 'SLL01', detail = json_build_object('limit', 'max_input_bytes',
        'size', v_bytes, 'max', v_max_bytes)::text;
  end if;
  select s.step_slug into v_root_map
  from sluice.steps s
  where s.flow_slug = check_run_input.flow_slug and s.step_type = 'map' and s.deps_count = 0
  order by s.step_index
  limit 1;
  if v_root_map is not null and jsonb_typeof(check_run_input.input) <> 'array' then
    raise exception 'Cannot start flow "%": root map step "%" maps over the run input, which must be an array, got %',
      check_run_input.flow_slug, v_root_map, jsonb_typeof(check_run_input.input)
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;

-- A debounced start of the concrete flow `flow_slug`, started as `started_via`: checks the input,
-- then joins the pending start of (started_via, key), replacing its input and pushing its due time
-- to now + window_seconds (capped by the first start's max wait), or begins one; returns its run
-- id. One statement decides: concurrent starts of a key wait for each other's row lock.
create function sluice.start_debounced(
  flow_slug text,
  started_via text,
  input jsonb,
  debounce jsonb
)
returns uuid
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  v_window interval := make_interval(secs => (start_debounced.debounce ->> 'window_seconds')::integer);
  v_max interval := make_interval(secs => (start_debounced.debounce ->> 'max_wait_seconds')::integer);
  -- The start's own time, not now(): the caller's transaction may have begun long before.
  v_now timestamptz := clock_timestamp();
  v_run uuid;
begin
  perform sluice.check_run_input(start_debounced.flow_slug, start_debounced.input);
  insert into sluice.debounced_starts as d (
    flow_ref, debounce_key, flow_slug, run_id, input, traceparent, first_at, last_at, due_at,
    max_due_at
  )
  values (
    start_debounced.started_via, start_debounced.debounce ->> 'key', start_debounced.flow_slug,
    gen_random_uuid(), start_debounced.input, sluice.caller_traceparent(), v_now, v_now,
    v_now + v_window, v_now + v_max
  )
  on conflict (flow_ref, debounce_key) do update
  set
    -- A row whose run could not be created is replaced by a new pending start.
    run_id = case when d.error_message is null then d.run_id else excluded.run_id end,
    flow_slug = excluded.flow_slug,
    input = excluded.input,
    traceparent = excluded.traceparent,
    starts = case when d.error_message is null then d.starts + 1 else 1 end,
    first_at = case when d.error_message is null then d.first_at else excluded.first_at end,
    last_at = excluded.last_at,
    due_at = case when d.error_message is null
      then least(excluded.due_at, coalesce(d.max_due_at, 'infinity'))
      else excluded.due_at end,
    max_due_at = case when d.error_message is null then d.max_due_at else excluded.max_due_at end,
    error_message = null
  returning d.run_id into v_run;
  return v_run;
end;
$$;

-- Creates a run of the concrete flow `flow_slug`, started as `started_via`, honouring the start
-- options. As in migration 20261207001300, except that a start with `debounce` joins or begins a
-- pending start (start_debounced) instead of creating a run.
create or replace function sluice.start_with_options(
  flow_slug text,
  started_via text,
  input jsonb,
  run_id uuid,
  options jsonb
)
returns uuid
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  v_key text := start_with_options.options ->> 'idempotency_key';
  v_run uuid;
  v_existing uuid;
  v_existing_input jsonb;
begin
  perform sluice.check_start_options(start_with_options.started_via, start_with_options.options);
  if start_with_options.options ? 'debounce' then
    if start_with_options.run_id is not null then
      raise exception 'Cannot start flow "%": a debounced start takes no run id (got %): its run id is the pending start''s',
        start_with_options.started_via, start_with_options.run_id
        using errcode = 'invalid_parameter_value';
    end if;
    return sluice.start_debounced(start_with_options.flow_slug, start_with_options.started_via,
      start_with_options.input, start_with_options.options -> 'debounce');
  end if;
  if v_key is null then
    return sluice.create_run(start_with_options.flow_slug, start_with_options.started_via,
      start_with_options.input, start_with_options.run_id);
  end if;

  v_run := coalesce(start_with_options.run_id, gen_random_uuid());
  insert into sluice.idempotency_keys (flow_ref, idempotency_key, run_id)
  values (start_with_options.started_via, v_key, v_run)
  on conflict do nothing;
  if found then
    return sluice.create_run(start_with_options.flow_slug, start_with_options.started_via,
      start_with_options.input, v_run);
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

-- The sweep of due debounced starts (the worker's heartbeat calls it every beat, like
-- release_due_waits): takes up to batch_size due rows (skip locked: a start holding one is
-- extending it), and for each deletes it and creates its run with its last input and run id, as
-- the name it was started by resolves now (an alias: the flow it points at when the run starts).
-- A start whose run cannot be created (its flow or alias was deleted) keeps its row with the
-- error and is not retried; the others go on. Returns how many runs it created.
create function sluice.start_due_debounced(batch_size integer default 100)
returns integer
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
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

revoke all on all routines in schema sluice from public;
revoke all on sluice.debounced_starts from public;
