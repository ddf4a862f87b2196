-- sluice.cron_replace_names, as the migrations create it (last defined in supabase/migrations/20261207000500_sluice_signals_schedules.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- croner's replaceAlpha: replaces each of `names` (lowercase, matched case-insensitively, in
-- order) in a month or day-of-week field by its number. Null when a name does not stand alone
-- (a letter, digit, '/' or '#' before it; a letter other than L or a digit after it).
CREATE OR REPLACE FUNCTION sluice.cron_replace_names(field text, names text[], numbers text[]) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
