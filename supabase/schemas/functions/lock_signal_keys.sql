-- sluice.lock_signal_keys, as the migrations create it (last defined in supabase/migrations/20261202000300_sluice_waits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Takes the transaction advisory lock of each signal key, in lock-id order (so two callers with
-- overlapping keys cannot deadlock, also when two keys share a lock id).
CREATE OR REPLACE FUNCTION sluice.lock_signal_keys(keys text[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_id bigint;
begin
  for v_id in
    select distinct hashtextextended('sluice.signal:' || k, 0)
    from unnest(lock_signal_keys.keys) as k
    where k is not null
    order by 1
  loop
    perform pg_advisory_xact_lock(v_id);
  end loop;
end;
$$;
