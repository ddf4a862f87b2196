-- Every sluice function, and every function of sluice's PGMQ-compatible layer, runs with
-- `search_path = pg_catalog, pg_temp` (issue 43 finding 1).
--
-- Until now only the four security definer functions pinned their search_path. The others ran
-- with their caller's, and PL/pgSQL and SQL function bodies resolve names when they run: a role
-- that may create in schema public (on Supabase service_role and others may) could define, say,
-- public.cardinality(bigint[]). An exact match wins over pg_catalog's polymorphic
-- cardinality(anyarray) wherever public is on the path, so the next worker's sluice.start_tasks
-- ran that function as the worker's role: postgres for a worker, the CLI or the dashboard
-- connected with SUPABASE_DB_URL, or another grantee. With the path pinned no shadow in public is
-- ever looked at. Every body already names its schema for everything that is not in pg_catalog,
-- so the pin changes no resolution but the shadowed ones. Functions called from a pinned
-- function inherit its path: pgmq's own functions too, while a sluice function runs them.
--
-- Covered: every function in schema sluice, and the functions in schema pgmq when pgmq there is
-- sluice's compat layer (src/migrations/pgmq_compat.sql: installed once, before the first
-- migration, and never re-run, so this is the compat layer's step too). The real pgmq extension
-- (pg_extension lists pgmq; also the compat layer packaged as an extension in tests) belongs to
-- its own maintainers and is left untouched, as is anything that is a member of an extension.
--
-- One routine cannot carry the pin: PostgreSQL refuses COMMIT in a procedure with a SET clause,
-- and sluice.prune_data_older_than commits batch by batch. It is redefined below to do nothing
-- itself but call pinned sluice functions and add integers (exact pg_catalog operators, which a
-- schema later on the path cannot displace); its checks and its result moved into two new
-- functions, prune_cutoff and finish_prune, whose texts and errors are the procedure's before.
--
-- `alter function ... set` adds to a function's settings (lock_run_steps and start_tasks keep
-- their plan_cache_mode). `create or replace function` replaces them: every later definition of a
-- sluice function carries `set search_path = pg_catalog, pg_temp` itself (docs/sql.md), and
-- tests/sql/search_path_test.ts fails on any function without it.

-- The cutoff of a prune (now() - retention, fixed once: now() moves with every batch's
-- transaction), after checking both arguments.
create function sluice.prune_cutoff(retention interval, batch_size integer)
returns timestamptz
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
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
  return now() - retention;
end;
$$;

-- The last step of a prune: deletes workers stopped before the cutoff and returns the prune's
-- result, {runs, workers}.
create function sluice.finish_prune(cutoff timestamptz, runs bigint)
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
  return jsonb_build_object('runs', finish_prune.runs, 'workers', v_workers);
end;
$$;

-- Deletes runs that finished (completed or failed) more than `retention` ago, with their step
-- states, tasks and archived messages, and workers that stopped that long ago. One transaction
-- per batch (20261130001200_sluice_maintenance.sql); CALLed outside a transaction block.
-- `result` returns {runs, workers}: the counts deleted. No SET clause (COMMIT), so nothing here
-- but calls of pinned sluice functions.
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

-- The worker's reads. PGMQ's own pgmq.read and pgmq.read_with_poll carry no pinned path, and the
-- real extension is not sluice's to alter: called straight from a worker's session they ran with
-- its path, where public.format(text, jsonb, text, interval) outmatches pg_catalog's variadic
-- format inside pgmq.read. Called through these, they run with the pin like everything else.
create function sluice.read_messages(queue_name text, vt integer, qty integer)
returns setof pgmq.message_record
language sql
set search_path = pg_catalog, pg_temp
as $$
  select * from pgmq.read(read_messages.queue_name, read_messages.vt, read_messages.qty)
$$;

create function sluice.read_messages_with_poll(
  queue_name text,
  vt integer,
  qty integer,
  max_poll_seconds integer,
  poll_interval_ms integer
)
returns setof pgmq.message_record
language sql
set search_path = pg_catalog, pg_temp
as $$
  select * from pgmq.read_with_poll(read_messages_with_poll.queue_name, read_messages_with_poll.vt,
    read_messages_with_poll.qty, read_messages_with_poll.max_poll_seconds,
    read_messages_with_poll.poll_interval_ms)
$$;

do $$
declare
  v_function record;
begin
  for v_function in
    select p.oid::pg_catalog.regprocedure as signature
    from pg_catalog.pg_proc p
    join pg_catalog.pg_namespace n on n.oid = p.pronamespace
    where p.prokind = 'f'
      and (
        n.nspname = 'sluice'
        or (
          n.nspname = 'pgmq'
          and not exists (select from pg_catalog.pg_extension e where e.extname = 'pgmq')
        )
      )
      and not exists (
        select from pg_catalog.pg_depend d
        where d.classid = 'pg_catalog.pg_proc'::pg_catalog.regclass
          and d.objid = p.oid
          and d.deptype = 'e'
      )
    order by p.oid
  loop
    execute pg_catalog.format('alter function %s set search_path = pg_catalog, pg_temp',
      v_function.signature);
  end loop;
end;
$$;

revoke all on all routines in schema sluice from public;
