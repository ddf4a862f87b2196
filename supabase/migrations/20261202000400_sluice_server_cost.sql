-- Server cost per task (issue 31): changes that cut WAL, buffer accesses and statements per task,
-- each measured alone with `deno task bench:sql_core --cost` (bench/README.md).
--
-- Redefined here (whole, create or replace): lock_run_steps, planned once per session;
-- send_run_event, which names the fields it leaves out without a query of its own.

create or replace function sluice.lock_run_steps(
  run_ids uuid[],
  step_slugs text[],
  skip_locked_runs boolean
)
returns setof sluice.step_states
language plpgsql
-- Custom plans re-planned the step-state lookup on every call (about 0.1 ms, a report's largest
-- single cost after the transitions themselves); the generic plan is the same index probes on
-- step_states_pkey for any batch, planned once per session.
set plan_cache_mode = force_generic_plan
as $$
declare
  v_runs uuid[];
begin
  if skip_locked_runs then
    select array_agg(r.run_id) into v_runs
    from (
      select r.run_id from sluice.runs r
      where r.run_id = any (lock_run_steps.run_ids) and r.status = 'started'
      order by r.run_id
      for update skip locked
    ) r;
  else
    select array_agg(r.run_id) into v_runs
    from (
      select r.run_id from sluice.runs r
      where r.run_id = any (lock_run_steps.run_ids) and r.status = 'started'
      order by r.run_id
      for update
    ) r;
  end if;

  -- Rows are locked after the sort, so in (run_id, step_slug) order.
  return query
    select ss.* from sluice.step_states ss
    where ss.run_id = any (v_runs)
      and (ss.run_id, ss.step_slug) in (
        select k.run_id, k.step_slug
        from unnest(lock_run_steps.run_ids, lock_run_steps.step_slugs) as k(run_id, step_slug)
      )
    order by ss.run_id, ss.step_slug
    for update of ss;
end;
$$;

-- Room on each page for the next versions of its rows. A task's row is written three times
-- (queued, started, completed), a step state's two to four times and a run's once per step: with
-- full pages every update moved its row to another page, which costs a lock record and a larger
-- update record in the WAL and rules out a heap-only (HOT) update where no indexed column changes
-- (a run's remaining_steps, a map step's remaining_tasks). Applies to pages written from now on.
alter table sluice.step_tasks set (fillfactor = 60);
alter table sluice.step_states set (fillfactor = 60);
alter table sluice.runs set (fillfactor = 60);

create or replace function sluice.send_run_event(run_id uuid, event jsonb)
returns void
language plpgsql
as $$
declare
  v_omitted jsonb;
  v_text text;
  v_field text;
begin
  -- An expression, not a query: PL/pgSQL evaluates it without a statement of its own (a query
  -- here was one nested statement per event, 2.7 per linear3 task).
  v_omitted := case
    when event ? 'output' and event ? 'errorMessage' then '["output", "errorMessage"]'::jsonb
    when event ? 'output' then '["output"]'::jsonb
    when event ? 'errorMessage' then '["errorMessage"]'::jsonb
  end;
  perform pg_notify(sluice.run_channel(run_id),
    (event - 'output' - 'errorMessage'
      || case when v_omitted is null then '{}' else jsonb_build_object('omitted', v_omitted) end
    )::text);
  -- Supabase Realtime's broadcast from the database, where it is installed: private topic, so
  -- only subscribers that the project's Realtime authorization policies admit receive it.
  if to_regprocedure('realtime.send(jsonb, text, text, boolean)') is not null then
    event := sluice.browser_event(event);
    v_text := event::text;
    if octet_length(v_text) > sluice.max_event_bytes() then
      foreach v_field in array array['output', 'errorMessage'] loop
        if event ? v_field then
          event := (event - v_field)
            || jsonb_build_object('omitted', coalesce(event -> 'omitted', '[]') || to_jsonb(v_field));
          v_text := event::text;
        end if;
        exit when octet_length(v_text) <= sluice.max_event_bytes();
      end loop;
    end if;
    perform realtime.send(event, event ->> 'type', sluice.run_topic(run_id), true);
  end if;
end;
$$;
