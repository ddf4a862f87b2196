-- sluice.release_held_tasks, as the migrations create it (last defined in supabase/migrations/20261207234003_sluice_rate_limits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The sweep: releases the held tasks of every key that has free slots, keys in order (the order
-- every caller takes key locks in). The commit of whatever freed a slot releases its key's held
-- tasks itself (sluice.release_noted_slots); the sweep catches the rest: a limit raised by a
-- recompile, a held task that was locked when its key was released, and the transactions that
-- leave releases to it (repeatable read and serializable ones). It also deletes the claims of
-- sluice.rate_limit_starts that no window counts any more (an idle key's last ones). Every
-- worker's heartbeat calls it. Returns how many tasks it sent.
CREATE OR REPLACE FUNCTION sluice.release_held_tasks() RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_key record;
  v_sent integer := 0;
begin
  delete from sluice.rate_limit_starts r
  using sluice.steps s
  where s.flow_slug = r.flow_slug and s.step_slug = r.step_slug
    and r.started_at <= clock_timestamp() - make_interval(secs => coalesce(s.opt_rate_period, 0));
  for v_key in
    select distinct t.flow_slug, t.step_slug, t.concurrency_key
    from sluice.step_tasks t
    where t.concurrency_key is not null and t.message_id is null and t.status = 'queued'
    order by t.flow_slug, t.step_slug, t.concurrency_key
  loop
    v_sent := v_sent + sluice.release_held_tasks(v_key.flow_slug, v_key.step_slug,
      v_key.concurrency_key);
  end loop;
  return v_sent;
end;
$$;

-- Sends the held tasks of one key of a limited step that fit in its free slots, oldest first, and
-- returns how many it sent. The key's transaction advisory lock serializes the decision: a slot
-- counted free here is not taken by a concurrent caller, and the lock is held until commit, so the
-- next caller counts this one's messages. It never waits on a row lock while it holds the key: a
-- held task another transaction has locked (a cancel ending its run) is skipped. A step whose
-- limits were removed sends every held task. A concurrency-limited step's start delay counts from
-- the release.
-- A rate-limited step (opt_rate_limit per opt_rate_period seconds) sends one task at a time per
-- key, and only once the one sent before it was claimed: it becomes visible when the window of the
-- key's last opt_rate_limit first claims (sluice.rate_limit_starts) has room, so every window of
-- opt_rate_period seconds holds at most opt_rate_limit first claims, however late workers read.
-- Lock order: the key's advisory lock -> step_tasks (skip locked) -> messages.
CREATE OR REPLACE FUNCTION sluice.release_held_tasks(flow_slug text, step_slug text, concurrency_key text) RETURNS integer
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_step record;
  v_free bigint;
  v_runs uuid[];
  v_indexes integer[];
  v_ids bigint[];
  v_visible_at timestamptz;
begin
  select s.opt_concurrency_limit, s.queue_name, coalesce(s.opt_start_delay, 0) as start_delay,
    s.opt_rate_limit, s.opt_rate_period
  into v_step
  from sluice.steps s
  where s.flow_slug = release_held_tasks.flow_slug and s.step_slug = release_held_tasks.step_slug;
  if not found then
    return 0;
  end if;
  perform pg_advisory_xact_lock(hashtextextended(format('sluice.slots:%s/%s/%s',
    release_held_tasks.flow_slug, release_held_tasks.step_slug,
    release_held_tasks.concurrency_key), 0));

  select coalesce(v_step.opt_concurrency_limit, 2147483647) - count(*) into v_free
  from sluice.step_tasks t
  where t.flow_slug = release_held_tasks.flow_slug and t.step_slug = release_held_tasks.step_slug
    and t.concurrency_key = release_held_tasks.concurrency_key
    and t.message_id is not null and t.status in ('queued', 'started');
  if v_free <= 0 then
    return 0;
  end if;

  if v_step.opt_rate_limit is not null then
    -- A task sent and not yet claimed (in its first attempt of the round) sends the next one when
    -- its claim commits.
    if exists (
      select 1 from sluice.step_tasks t
      where t.flow_slug = release_held_tasks.flow_slug
        and t.step_slug = release_held_tasks.step_slug
        and t.concurrency_key = release_held_tasks.concurrency_key
        and t.message_id is not null and t.status = 'queued'
        and t.attempts_count = t.attempts_base
    ) then
      return 0;
    end if;
    delete from sluice.rate_limit_starts r
    where r.flow_slug = release_held_tasks.flow_slug and r.step_slug = release_held_tasks.step_slug
      and r.rate_key = release_held_tasks.concurrency_key
      and r.started_at <= clock_timestamp() - make_interval(secs => v_step.opt_rate_period);
    select greatest(clock_timestamp() + make_interval(secs => v_step.start_delay),
      coalesce(max(w.started_at) + make_interval(secs => v_step.opt_rate_period), '-infinity'))
    into v_visible_at
    from (
      select r.started_at from sluice.rate_limit_starts r
      where r.flow_slug = release_held_tasks.flow_slug
        and r.step_slug = release_held_tasks.step_slug
        and r.rate_key = release_held_tasks.concurrency_key
      order by r.started_at desc
      offset v_step.opt_rate_limit - 1
      limit 1
    ) w;
    v_free := 1;
  end if;

  select array_agg(h.run_id order by h.queued_at, h.run_id, h.task_index),
    array_agg(h.task_index order by h.queued_at, h.run_id, h.task_index)
  into v_runs, v_indexes
  from (
    select t.run_id, t.task_index, t.queued_at
    from sluice.step_tasks t
    where t.flow_slug = release_held_tasks.flow_slug
      and t.step_slug = release_held_tasks.step_slug
      and t.concurrency_key = release_held_tasks.concurrency_key
      and t.message_id is null and t.status = 'queued'
    order by t.queued_at, t.run_id, t.task_index
    limit v_free
    for update skip locked
  ) h;
  if v_runs is null then
    return 0;
  end if;

  select array_agg(sent.id order by sent.ord) into v_ids
  from pgmq.send_batch(
    v_step.queue_name,
    array(
      select jsonb_build_object('flow_slug', release_held_tasks.flow_slug, 'run_id', m.run_id,
        'step_slug', release_held_tasks.step_slug, 'task_index', m.task_index)
      from unnest(v_runs, v_indexes) with ordinality as m(run_id, task_index, ord)
      order by m.ord
    ),
    coalesce(v_visible_at, clock_timestamp() + make_interval(secs => v_step.start_delay))
  ) with ordinality as sent(id, ord);

  update sluice.step_tasks t
  set message_id = m.id
  from unnest(v_runs, v_indexes, v_ids) as m(run_id, task_index, id)
  where t.run_id = m.run_id and t.step_slug = release_held_tasks.step_slug
    and t.task_index = m.task_index;

  if coalesce(v_visible_at, clock_timestamp() + make_interval(secs => v_step.start_delay))
    <= clock_timestamp()
  then
    perform sluice.notify_queue(v_step.queue_name);
  end if;
  return cardinality(v_ids);
end;
$$;
