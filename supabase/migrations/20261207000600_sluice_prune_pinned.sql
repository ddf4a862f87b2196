-- The prune procedure as both 20261207000400 (a procedure that commits cannot carry a pinned
-- search_path, so it only calls pinned sluice functions) and 20261207000500 (it prunes signals)
-- want it: the last step, sluice.finish_prune, now also prunes signals and returns
-- {runs, workers, signals}.

-- The last step of a prune: deletes workers stopped before the cutoff and the signals
-- sluice.prune_signals removes, and returns the prune's result, {runs, workers, signals}.
create or replace function sluice.finish_prune(cutoff timestamptz, runs bigint)
returns jsonb
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  v_workers integer;
begin
  with pruned as (
    delete from sluice.workers w where w.stopped_at < finish_prune.cutoff returning 1
  )
  select count(*) into v_workers from pruned;
  return jsonb_build_object('runs', finish_prune.runs, 'workers', v_workers,
    'signals', sluice.prune_signals(finish_prune.cutoff));
end;
$$;

-- Deletes runs that finished more than `retention` ago, with their step states, tasks and
-- archived messages, workers that stopped that long ago, and expired or long-consumed signals.
-- One transaction per batch; CALLed outside a transaction block. No SET clause (COMMIT), so
-- nothing here but calls of pinned sluice functions.
create or replace procedure sluice.prune_data_older_than(
  retention interval,
  batch_size integer default 1000,
  inout result jsonb default null
)
language plpgsql
as $$
declare
  v_cutoff timestamptz;
  v_runs bigint := 0;
  v_batch integer;
begin
  v_cutoff := sluice.prune_cutoff(retention, batch_size);
  loop
    v_batch := sluice.prune_runs_batch(v_cutoff, batch_size);
    v_runs := v_runs + v_batch;
    commit;
    exit when v_batch < batch_size;
  end loop;
  result := sluice.finish_prune(v_cutoff, v_runs);
end;
$$;
