-- sluice.cron_problem, as the migrations create it (last defined in supabase/migrations/20261207000500_sluice_signals_schedules.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- What is wrong with a cron expression as sluice's croner reads it (src/dsl/schedule_times.ts:
-- 5 fields, or 6 with seconds first), or null when croner accepts it. A port of croner 11's
-- CronPattern.parse; tests/sql/schedule_validation_test.ts runs both on the same expressions.
-- Whether the expression ever fires is not checked here (croner searches for that).
CREATE OR REPLACE FUNCTION sluice.cron_problem(cron text) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
