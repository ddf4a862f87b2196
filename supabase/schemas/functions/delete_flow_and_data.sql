-- sluice.delete_flow_and_data, as the migrations create it (last defined in supabase/migrations/20261207235622_sluice_flow_access_checks.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Removes a flow with all its runs, tasks and messages, its private queues and their registry
-- rows and its aliases. Shared queues stay; only this flow's messages are removed from them.
-- Refuses to delete a flow that a foreign alias points at: the alias would silently fall back to
-- whatever else has its name. Unless `force` (a development recompile, `flows reset --force`), also
-- refuses a flow with active runs (they would vanish without a word) or with live workers (they
-- would loop on a dropped queue), naming the count and the workers. Security definer: it drops
-- queues (sluice.drop_queue; see 20261130001500_sluice_privileges.sql).
CREATE OR REPLACE FUNCTION sluice.delete_flow_and_data(flow_slug text, force boolean DEFAULT false) RETURNS void
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_queues text[];
  v_ids bigint[];
  v_queue text;
  v_aliases text;
  v_active bigint;
  v_workers text;
begin
  -- Security definer: the check speaks for the session's role (sluice.caller_role).
  perform sluice.check_flow_access(delete_flow_and_data.flow_slug,
    format('delete flow %s', delete_flow_and_data.flow_slug));
  if not exists (select 1 from sluice.flows f where f.flow_slug = delete_flow_and_data.flow_slug)
  then
    raise exception 'Cannot delete flow "%": no such flow', delete_flow_and_data.flow_slug
      using errcode = 'no_data_found';
  end if;
  perform pg_advisory_xact_lock(
    hashtextextended('sluice.flow:' || lower(delete_flow_and_data.flow_slug), 0));

  select string_agg(format('"%s"', a.alias), ', ' order by a.alias) into v_aliases
  from sluice.aliases a
  where a.flow_slug = delete_flow_and_data.flow_slug and a.alias <> a.flow_slug;
  if v_aliases is not null then
    raise exception 'Cannot delete flow "%": alias % points at it; activate the alias on another flow first',
      delete_flow_and_data.flow_slug, v_aliases
      using errcode = 'dependent_objects_still_exist';
  end if;

  if not coalesce(delete_flow_and_data.force, false) then
    select count(*) into v_active
    from sluice.runs r
    where r.flow_slug = delete_flow_and_data.flow_slug and r.status = 'started';
    if v_active > 0 then
      raise exception 'Cannot delete flow "%": % active run(s); let them finish or cancel them, or pass force',
        delete_flow_and_data.flow_slug, v_active
        using errcode = 'object_in_use';
    end if;
    select string_agg(format('%s (%s)', w.worker_id, w.function_name), ', ' order by w.worker_id::text)
    into v_workers
    from sluice.live_workers w
    where w.flow_slug = delete_flow_and_data.flow_slug and w.deprecated_at is null;
    if v_workers is not null then
      raise exception 'Cannot delete flow "%": live workers serve it: %; stop them first, or pass force',
        delete_flow_and_data.flow_slug, v_workers
        using errcode = 'object_in_use';
    end if;
  end if;

  select array_agg(t.queue_name), array_agg(t.message_id) into v_queues, v_ids
  from sluice.step_tasks t
  join sluice.queues q on q.queue_name = t.queue_name and q.ownership = 'shared'
  where t.flow_slug = delete_flow_and_data.flow_slug and t.message_id is not null;
  -- Runs (with their step states and tasks) before messages: the global lock order.
  delete from sluice.runs r where r.flow_slug = delete_flow_and_data.flow_slug;
  for v_queue in select distinct q from unnest(v_queues) as q loop
    perform pgmq.delete(v_queue,
      array(select m.id from unnest(v_queues, v_ids) as m(q, id) where m.q = v_queue));
  end loop;
  perform sluice.delete_archived_messages(v_queues, v_ids);

  select array_agg(q.queue_name) into v_queues
  from sluice.queues q
  where q.ownership = 'private' and q.owner_flow_slug = delete_flow_and_data.flow_slug;

  delete from sluice.aliases a where a.flow_slug = delete_flow_and_data.flow_slug;
  delete from sluice.flows f where f.flow_slug = delete_flow_and_data.flow_slug;

  -- A queue an operator already dropped by hand is skipped: PGMQ 1.5.1's drop_queue raises for it.
  for v_queue in
    select q from unnest(v_queues) as q
    where exists (select 1 from pgmq.meta m where m.queue_name = q)
  loop
    perform sluice.drop_queue(delete_flow_and_data.flow_slug, v_queue);
  end loop;
end;
$$;
