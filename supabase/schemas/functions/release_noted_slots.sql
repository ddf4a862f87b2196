-- sluice.release_noted_slots, as the migrations create it (last defined in supabase/migrations/20261207234003_sluice_rate_limits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Deferred constraint trigger of step_tasks (fires at commit for each row note_freed_slot noted):
-- the first firing releases every noted key, in key order, and clears the notes; the later
-- firings find none. Under repeatable read or serializable, whose snapshot would not count the
-- slots a concurrent commit took, it leaves the keys to the sweep (sluice.release_held_tasks()).
-- Security definer: a deferred trigger runs at commit as the session's role, which is not the
-- definer's when the start came through sluice.start_run (a browser's role may touch nothing of
-- sluice); it releases only keys noted by rows its transaction changed, as the sweep would.
-- Lock order: the key advisory locks in (flow_slug, step_slug, concurrency_key) order.
CREATE OR REPLACE FUNCTION sluice.release_noted_slots() RETURNS trigger
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_notes text := current_setting('sluice.noted_slots', true);
  v_key record;
begin
  if v_notes is null or v_notes = '' then
    return null;
  end if;
  perform set_config('sluice.noted_slots', '', true);
  if current_setting('transaction_isolation') <> 'read committed' then
    return null;
  end if;
  for v_key in
    select distinct n.note ->> 0 as flow_slug, n.note ->> 1 as step_slug,
      n.note ->> 2 as concurrency_key
    from unnest(string_to_array(rtrim(v_notes, E'\n'), E'\n')) as l(line)
    cross join lateral (select l.line::jsonb as note) n
    order by 1, 2, 3
  loop
    perform sluice.release_held_tasks(v_key.flow_slug, v_key.step_slug, v_key.concurrency_key);
  end loop;
  return null;
end;
$$;
