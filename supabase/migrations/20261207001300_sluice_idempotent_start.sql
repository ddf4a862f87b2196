-- Idempotent starts (issue 46, docs/flow_control.md#idempotent-starts): a start that carries an
-- idempotency key returns the run an earlier start of the same name with the same key created,
-- instead of creating another.
--
-- The key is claimed in sluice.idempotency_keys, whose primary key (flow_ref, idempotency_key) is
-- the race's referee: `insert ... on conflict do nothing` waits for a concurrent claimer of the
-- same key to commit or roll back, so of many concurrent starts exactly one creates the run and
-- the others return it; a start rolled back (with the caller's transaction) leaves no key. The
-- key row lives as long as its run: the foreign key deletes it with the run, so `prune` (which
-- deletes finished runs older than its retention) is the key's retention. The foreign key is
-- deferred because the key is claimed before the run it names is created.
--
-- New routines only; no existing routine is redefined: the old signatures of start_flow,
-- start_flow_version and start_run stay as they are, and the overloads with an `options`
-- argument are distinct functions (a call with the old arguments cannot reach them).

create table sluice.idempotency_keys (
  flow_ref text not null,
  idempotency_key text not null,
  run_id uuid not null,
  created_at timestamptz not null default now(),
  primary key (flow_ref, idempotency_key),
  foreign key (run_id) references sluice.runs (run_id) on delete cascade
    deferrable initially deferred
);

comment on table sluice.idempotency_keys is
  'The idempotency key of each run started with one, per name started (alias or concrete slug); deleted with its run.';

-- Deleting a run (prune, delete_flow_and_data) finds its key by this index.
create index idempotency_keys_run_id_idx on sluice.idempotency_keys (run_id);

-- The longest idempotency key, in characters.
create function sluice.max_idempotency_key_length()
returns integer
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$ select 255 $$;

-- Validates the options of a start before anything is written, naming the offending value:
-- options is a JSON object (or null) of known keys only.
create function sluice.check_start_options(flow_ref text, options jsonb)
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
  where k not in ('idempotency_key')
  order by k
  limit 1;
  if v_unknown is not null then
    raise exception 'Cannot start flow "%": unknown start option "%"',
      check_start_options.flow_ref, v_unknown
      using errcode = 'invalid_parameter_value', hint = 'Known options: idempotency_key';
  end if;
  if v_key is not null and jsonb_typeof(v_key) <> 'null' and (jsonb_typeof(v_key) <> 'string'
      or length(v_key #>> '{}') not between 1 and sluice.max_idempotency_key_length())
  then
    raise exception 'Cannot start flow "%": idempotency_key must be a string of 1 to % characters, got %',
      check_start_options.flow_ref, sluice.max_idempotency_key_length(), left(v_key::text, 80)
      using errcode = 'invalid_parameter_value';
  end if;
end;
$$;

-- Creates a run of the concrete flow `flow_slug`, started as `started_via`, honouring the start
-- options: with an idempotency key it claims the key first and, when an earlier start of the same
-- name holds it, returns that start's run instead (or raises SLI01 when that run's input differs:
-- the same key for other work is a caller's bug, not a retry).
create function sluice.start_with_options(
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

-- start_flow with start options (`{"idempotency_key": "..."}`): resolves flow_ref as an alias
-- first, then as a concrete slug, as start_flow(flow_ref, input, run_id) does.
create function sluice.start_flow(flow_ref text, input jsonb, run_id uuid, options jsonb)
returns uuid
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  v_flow text;
begin
  select a.flow_slug into v_flow from sluice.aliases a where a.alias = start_flow.flow_ref;
  if v_flow is null then
    select f.flow_slug into v_flow from sluice.flows f where f.flow_slug = start_flow.flow_ref;
  end if;
  if v_flow is null then
    raise exception 'Cannot start flow "%": no flow or alias has that name', start_flow.flow_ref
      using errcode = 'no_data_found',
        hint = 'A flow exists once a worker for it has started and compiled it';
  end if;
  return sluice.start_with_options(v_flow, start_flow.flow_ref, start_flow.input,
    start_flow.run_id, start_flow.options);
end;
$$;

-- start_flow_version with start options: the concrete flow `flow_slug`, never through an alias.
create function sluice.start_flow_version(flow_slug text, input jsonb, run_id uuid, options jsonb)
returns uuid
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
begin
  if not exists (
    select 1 from sluice.flows f where f.flow_slug = start_flow_version.flow_slug
  ) then
    raise exception 'Cannot start flow "%": no such flow', start_flow_version.flow_slug
      using errcode = 'no_data_found',
        hint = 'A flow exists once a worker for it has started and compiled it';
  end if;
  return sluice.start_with_options(start_flow_version.flow_slug, start_flow_version.flow_slug,
    start_flow_version.input, start_flow_version.run_id, start_flow_version.options);
end;
$$;

-- The browser's start with start options (docs/events.md#browsers-and-edge-functions-on-supabase):
-- security definer like start_run(flow_ref, input), and like it executable by no role until
-- granted explicitly.
create function sluice.start_run(flow_ref text, input jsonb, options jsonb)
returns uuid
language plpgsql
security definer
set search_path = pg_catalog, pg_temp
as $$
begin
  return sluice.start_flow(start_run.flow_ref, start_run.input, null, start_run.options);
end;
$$;

revoke all on all routines in schema sluice from public;
revoke all on sluice.idempotency_keys from public;
