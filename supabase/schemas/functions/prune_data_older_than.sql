-- sluice.prune_data_older_than, as the migrations create it (last defined in supabase/migrations/20261130001200_sluice_maintenance.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Deletes runs that finished (completed or failed) more than `retention` ago, with their step
-- states, tasks and archived messages, and workers that stopped that long ago.
--
-- A procedure, so that every batch of batch_size runs is its own transaction: each commits before
-- the next begins, so no transaction holds back vacuum, grows an unbounded array or writes the
-- whole prune's WAL at once, and claims and completions keep running throughout. It must be
-- CALLed outside an explicit transaction block (COMMIT is impossible inside one). `result`
-- returns {runs, workers}: the counts deleted.
CREATE OR REPLACE PROCEDURE sluice.prune_data_older_than(IN retention interval, IN batch_size integer DEFAULT 1000, INOUT result jsonb DEFAULT NULL::jsonb)
    LANGUAGE plpgsql
    AS $$
declare
  v_cutoff timestamptz;
  v_runs bigint := 0;
  v_batch integer;
  v_workers integer;
begin
  if retention is null or retention < interval '0' then
    raise exception 'Cannot prune: retention must be a non-negative interval, got %',
      coalesce(retention::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  if batch_size is null or batch_size < 1 then
    raise exception 'Cannot prune: batch_size must be a positive integer, got %',
      coalesce(batch_size::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  -- Fixed once: now() moves with every batch's transaction.
  v_cutoff := now() - retention;

  loop
    v_batch := sluice.prune_runs_batch(v_cutoff, batch_size);
    v_runs := v_runs + v_batch;
    commit;
    exit when v_batch < batch_size;
  end loop;

  with pruned as (
    delete from sluice.workers w where w.stopped_at < v_cutoff returning 1
  )
  select count(*) into v_workers from pruned;

  result := jsonb_build_object('runs', v_runs, 'workers', v_workers);
end;
$$;
