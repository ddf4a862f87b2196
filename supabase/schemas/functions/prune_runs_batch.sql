-- sluice.prune_runs_batch, as the migrations create it (last defined in supabase/migrations/20261202000100_sluice_run_control.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- As in migration 20261130001200, with cancelled runs: they finished at cancelled_at.
CREATE OR REPLACE FUNCTION sluice.prune_runs_batch(cutoff timestamp with time zone, batch_size integer) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_runs uuid[];
  v_queues text[];
  v_ids bigint[];
begin
  -- runs_finished_idx answers this in order, reading no more than the batch.
  select array_agg(b.run_id) into v_runs
  from (
    select r.run_id
    from sluice.runs r
    where r.status <> 'started'
      and coalesce(r.completed_at, r.failed_at, r.cancelled_at) < prune_runs_batch.cutoff
    order by coalesce(r.completed_at, r.failed_at, r.cancelled_at)
    limit prune_runs_batch.batch_size
    for update skip locked
  ) b;
  if v_runs is null then
    return 0;
  end if;

  select array_agg(t.queue_name), array_agg(t.message_id) into v_queues, v_ids
  from sluice.step_tasks t
  where t.run_id = any (v_runs) and t.message_id is not null;
  perform sluice.delete_archived_messages(v_queues, v_ids);

  delete from sluice.runs r where r.run_id = any (v_runs);
  return cardinality(v_runs);
end;
$$;
