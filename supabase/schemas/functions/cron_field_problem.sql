-- sluice.cron_field_problem, as the migrations create it (last defined in supabase/migrations/20261207000500_sluice_signals_schedules.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- croner's partToArray for field `field` (0 second, 1 minute, 2 hour, 3 day of month, 4 month,
-- 5 day of week) after names were replaced: what is wrong with `part`, or null. `day_special`: the
-- day-of-month field had L or LW, so it may be empty.
CREATE OR REPLACE FUNCTION sluice.cron_field_problem(field integer, part text, day_special boolean) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
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
$_$;
