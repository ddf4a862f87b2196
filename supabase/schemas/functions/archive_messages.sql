-- sluice.archive_messages, as the migrations create it (last defined in supabase/migrations/20261130000400_sluice_run_transitions.sql, 20261130001600_sluice_rollout.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Archives messages on the queues they live on: queue_names[i] holds message_ids[i].
CREATE OR REPLACE FUNCTION sluice.archive_messages(queue_names text[], message_ids bigint[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_queue text;
begin
  -- Nearly always every message lives on one queue: archive them in one call.
  if queue_names[1] = all (queue_names) then
    perform pgmq.archive(queue_names[1], array_remove(message_ids, null));
    return;
  end if;
  for v_queue in select distinct q from unnest(queue_names) as q where q is not null loop
    perform pgmq.archive(
      v_queue,
      array(
        select m.id from unnest(queue_names, message_ids) as m(q, id)
        where m.q = v_queue and m.id is not null
      )
    );
  end loop;
end;
$$;

-- Archives messages of a queue that no worker may handle (the way out of a restart pause caused
-- by a stray message). A message that still carries a queued or started task is refused: its task
-- would never run. Nothing needs locking for that check: a task's message never changes, and a
-- task never returns to queued or started once terminal. Returns the ids archived and those the
-- queue did not hold.
CREATE OR REPLACE FUNCTION sluice.archive_messages(queue_name text, message_ids bigint[]) RETURNS jsonb
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_queue text := lower(archive_messages.queue_name);
  v_task record;
  v_archived bigint[];
begin
  if not exists (select 1 from pgmq.meta m where lower(m.queue_name) = v_queue) then
    raise exception 'Cannot archive messages of queue "%": no such queue', archive_messages.queue_name
      using errcode = 'no_data_found';
  end if;
  if message_ids is null or cardinality(message_ids) = 0 or array_position(message_ids, null) is not null
  then
    raise exception 'Cannot archive messages of queue "%": give one or more message ids, got %',
      v_queue, coalesce(message_ids::text, 'null')
      using errcode = 'invalid_parameter_value';
  end if;
  select t.message_id, t.run_id, t.step_slug, t.task_index, t.status into v_task
  from sluice.step_tasks t
  where t.queue_name = v_queue and t.message_id = any (message_ids)
    and t.status in ('queued', 'started')
  order by t.message_id
  limit 1;
  if found then
    raise exception 'Cannot archive message % of queue "%": it carries task (%, %, %), which is %; only messages no task waits on may be archived',
      v_task.message_id, v_queue, v_task.run_id, v_task.step_slug, v_task.task_index, v_task.status
      using errcode = 'object_in_use';
  end if;

  select coalesce(array_agg(a order by a), '{}') into v_archived
  from pgmq.archive(v_queue, message_ids) a;
  return jsonb_build_object(
    'archived', to_jsonb(v_archived),
    'missing', to_jsonb(array(
      select distinct m from unnest(message_ids) m where m <> all (v_archived) order by m
    ))
  );
end;
$$;
