-- sluice.reject_task_identity_change, as the migrations create it (last defined in supabase/migrations/20261207232321_sluice_concurrency_limits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- A task's flow and queue never change; its message changes only when a retry gives a finished
-- task (failed, cancelled) a fresh attempt: the old message was archived when the task ended,
-- and the new one is sent to the same stored queue (or, for a limited step's task, none yet: the
-- task is held until a slot frees, sluice.release_held_tasks).
CREATE OR REPLACE FUNCTION sluice.reject_task_identity_change() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if new.flow_slug is distinct from old.flow_slug
    or new.queue_name is distinct from old.queue_name
    or (old.message_id is not null and new.message_id is distinct from old.message_id
      and not (old.status in ('failed', 'cancelled') and new.status = 'queued'
        and (new.message_id is not null or new.concurrency_key is not null)))
  then
    raise exception 'Cannot change the identity of task (%, %, %): flow_slug, queue_name and message_id are immutable',
      old.run_id, old.step_slug, old.task_index
      using errcode = 'integrity_constraint_violation';
  end if;
  return new;
end;
$$;
