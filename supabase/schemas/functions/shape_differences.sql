-- sluice.shape_differences, as the migrations create it (last defined in supabase/migrations/20261202000300_sluice_waits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

CREATE OR REPLACE FUNCTION sluice.shape_differences(stored jsonb, proposed jsonb) RETURNS text[]
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_out text[] := '{}';
  v_stored_count integer := jsonb_array_length(stored -> 'steps');
  v_proposed_count integer := jsonb_array_length(proposed -> 'steps');
  v_key text;
  v_s jsonb;
  v_p jsonb;
begin
  if stored ->> 'queue_mode' is distinct from proposed ->> 'queue_mode' then
    v_out := v_out || format('queue mode: compiled %s, definition %s',
      stored ->> 'queue_mode', proposed ->> 'queue_mode');
  end if;
  for i in 0 .. greatest(v_stored_count, v_proposed_count) - 1 loop
    v_s := stored -> 'steps' -> i;
    v_p := proposed -> 'steps' -> i;
    if v_s is null then
      v_out := v_out || format('step %s: "%s" is new in the definition', i, v_p ->> 'step_slug');
    elsif v_p is null then
      v_out := v_out || format('step %s: "%s" is missing from the definition', i, v_s ->> 'step_slug');
    else
      foreach v_key in array array['step_slug', 'step_type', 'deps', 'map_source',
        'required_input_pattern', 'forbidden_input_pattern', 'when_unmet', 'when_exhausted',
        'queue_name', 'wait']
      loop
        if v_s -> v_key is distinct from v_p -> v_key then
          v_out := v_out || format('step %s ("%s"): %s compiled %s, definition %s',
            i, v_s ->> 'step_slug', v_key, v_s -> v_key, v_p -> v_key);
        end if;
      end loop;
    end if;
  end loop;
  return v_out;
end;
$$;
