-- sluice.prune_data_older_than, as the migrations create it (last defined in supabase/migrations/20261207000500_sluice_signals_schedules.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- As in 20261130001200, and it prunes signals (sluice.prune_signals): `result` is {runs, workers,
-- signals}. A procedure that commits cannot have a SET clause (PostgreSQL refuses transaction
-- control in one), so instead of a pinned search_path every name here is schema-qualified,
-- pg_catalog's included.
CREATE OR REPLACE PROCEDURE sluice.prune_data_older_than(IN retention interval, IN batch_size integer DEFAULT 1000, INOUT result jsonb DEFAULT NULL::jsonb)
    LANGUAGE plpgsql
    AS $$
declare
  v_cutoff timestamptz;
  v_runs bigint := 0;
  v_batch integer;
  v_workers integer;
  v_signals integer;
begin
  if retention is null or retention < interval '0' then
    raise exception 'Cannot prune: retention must be a non-negative interval, got %',
      coalesce(retention::pg_catalog.text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if batch_size is null or batch_size < 1 then
    raise exception 'Cannot prune: batch_size must be a positive integer, got %',
      coalesce(batch_size::pg_catalog.text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  -- Fixed once: now() moves with every batch's transaction.
  v_cutoff := pg_catalog.now() operator(pg_catalog.-) retention;

  loop
    v_batch := sluice.prune_runs_batch(v_cutoff, batch_size);
    v_runs := v_runs + v_batch;
    commit;
    exit when v_batch < batch_size;
  end loop;

  with pruned as (
    delete from sluice.workers w where w.stopped_at operator(pg_catalog.<) v_cutoff returning 1
  )
  select pg_catalog.count(*) into v_workers from pruned;
  v_signals := sluice.prune_signals(v_cutoff);

  result := pg_catalog.jsonb_build_object('runs', v_runs, 'workers', v_workers,
    'signals', v_signals);
end;
$$;
