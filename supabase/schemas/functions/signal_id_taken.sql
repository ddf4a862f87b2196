-- sluice.signal_id_taken, as the migrations create it (last defined in supabase/migrations/20261207000500_sluice_signals_schedules.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Raises SLS01 when `existing` (the stored signal of a signal id) was sent with another key than
-- `key`; the same key is a duplicate, which the caller answers.
CREATE OR REPLACE FUNCTION sluice.signal_id_taken(existing sluice.signals, key text) RETURNS void
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if existing.signal_key <> signal_id_taken.key then
    raise exception 'Cannot send signal "%" with key "%": that signal id was sent with key "%"',
      left(existing.signal_id, 100), left(signal_id_taken.key, 100),
      left(existing.signal_key, 100)
      using errcode = 'SLS01',
        detail = json_build_object('signal_id', existing.signal_id, 'key', signal_id_taken.key,
          'existing_key', existing.signal_key)::text,
        hint = 'A signal id names one signal: use a new id for another key (include the key in the id)';
  end if;
end;
$$;
