-- sluice.create_schedule, as the migrations create it (last defined in supabase/migrations/20261202000200_sluice_schedules.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Creates a schedule with its first due times (computed by the caller from the cron expression).
-- Validates everything before writing; a schedule of that name must not exist.
CREATE OR REPLACE FUNCTION sluice.create_schedule(schedule_name text, target_kind text, target text, input jsonb, cron text, timezone text, missed text, next_due_at timestamp with time zone, following_due_at timestamp with time zone, created_at timestamp with time zone DEFAULT clock_timestamp()) RETURNS sluice.schedules
    LANGUAGE plpgsql
    AS $$
declare
  v_row sluice.schedules;
begin
  if create_schedule.schedule_name is null or not sluice.is_valid_slug(create_schedule.schedule_name) then
    raise exception 'Cannot create schedule "%": a schedule name starts with a letter and holds letters, digits and single underscores',
      create_schedule.schedule_name using errcode = 'invalid_parameter_value';
  end if;
  if create_schedule.target_kind is distinct from 'flow' and create_schedule.target_kind is distinct from 'alias' then
    raise exception 'Cannot create schedule "%": target kind must be flow or alias, got %',
      create_schedule.schedule_name, coalesce(create_schedule.target_kind, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if create_schedule.missed is distinct from 'run-once' and create_schedule.missed is distinct from 'skip' then
    raise exception 'Cannot create schedule "%": missed must be run-once or skip, got %',
      create_schedule.schedule_name, coalesce(create_schedule.missed, 'null')
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
  if create_schedule.target_kind = 'flow' and not exists (
    select 1 from sluice.flows f where f.flow_slug = create_schedule.target
  ) then
    raise exception 'Cannot create schedule "%": no flow "%"', create_schedule.schedule_name,
      create_schedule.target using errcode = 'no_data_found',
        hint = 'A flow exists once a worker for it has started and compiled it';
  end if;
  if create_schedule.target_kind = 'alias' and not exists (
    select 1 from sluice.aliases a where a.alias = create_schedule.target
  ) then
    raise exception 'Cannot create schedule "%": no alias "%"', create_schedule.schedule_name,
      create_schedule.target using errcode = 'no_data_found',
        hint = 'Every compiled flow has an alias of its own name; activate_alias creates others';
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
