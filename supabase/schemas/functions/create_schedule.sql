-- sluice.create_schedule, as the migrations create it (last defined in supabase/migrations/20261207235622_sluice_flow_access_checks.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- As in 20261202000200, and the cron expression (sluice.cron_problem, at most
-- sluice.max_cron_length() characters), the time zone (pg_timezone_names) and the input (the run
-- input limit: the flow's max_input_bytes, or the default for an alias, which may move) are
-- checked before anything is written.
CREATE OR REPLACE FUNCTION sluice.create_schedule(schedule_name text, target_kind text, target text, input jsonb, cron text, timezone text, missed text, next_due_at timestamp with time zone, following_due_at timestamp with time zone, created_at timestamp with time zone DEFAULT clock_timestamp()) RETURNS sluice.schedules
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
  perform sluice.check_flow_access(create_schedule.target,
    format('create schedule %s', create_schedule.schedule_name));
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
