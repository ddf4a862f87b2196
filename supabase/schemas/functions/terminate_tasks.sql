-- sluice.terminate_tasks, as the migrations create it (last defined in supabase/migrations/20261130000400_sluice_run_transitions.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Moves the queued and started tasks of the given steps (all steps when step_slugs is null) to
-- 'skipped' or 'cancelled' and archives their messages on each task's own queue.
CREATE OR REPLACE FUNCTION sluice.terminate_tasks(run_id uuid, step_slugs text[], new_status text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_queues text[];
  v_ids bigint[];
begin
  with terminated as (
    update sluice.step_tasks t
    set status = new_status,
      skipped_at = case when new_status = 'skipped' then now() end,
      cancelled_at = case when new_status = 'cancelled' then now() end
    where t.run_id = terminate_tasks.run_id
      and (step_slugs is null or t.step_slug = any (step_slugs))
      and t.status in ('queued', 'started')
    returning t.queue_name, t.message_id
  )
  select array_agg(queue_name), array_agg(message_id) into v_queues, v_ids from terminated;
  if v_ids is not null then
    perform sluice.archive_messages(v_queues, v_ids);
  end if;
end;
$$;
