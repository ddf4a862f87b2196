-- sluice.prune_data_older_than, as the migrations create it (last defined in supabase/migrations/20261207000600_sluice_prune_pinned.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Deletes runs that finished more than `retention` ago, with their step states, tasks and
-- archived messages, workers that stopped that long ago, and expired or long-consumed signals.
-- One transaction per batch; CALLed outside a transaction block. No SET clause (COMMIT), so
-- nothing here but calls of pinned sluice functions.
CREATE OR REPLACE PROCEDURE sluice.prune_data_older_than(IN retention interval, IN batch_size integer DEFAULT 1000, INOUT result jsonb DEFAULT NULL::jsonb)
    LANGUAGE plpgsql
    AS $$
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
