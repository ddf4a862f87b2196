-- PGMQ 1.5.1-compatible SQL layer (schema `pgmq`).
--
-- sluice prefers the real extension (`create extension pgmq`). This file is installed only where
-- that extension is unavailable (plain PostgreSQL, CI, embedded). For every object sluice or its
-- users touch it reproduces PGMQ 1.5.1: schema, table layout (columns, order, defaults, indexes),
-- record types, function signatures, parameter names, defaults, return types, clocks and error
-- texts (the facts are listed in the project specification, PGMQ.md). The engine must never depend
-- on anything only this file does.
--
-- It must NEVER be installed over the real extension: the two would fight over the same names and
-- the extension would no longer own its objects. The guard below aborts the whole installation
-- (the installer runs this file in one transaction) when the extension is present.
--
-- Plain SQL, no psql meta-commands; re-running it is harmless. The test runner also packages this
-- file as an extension script (scripts/_pgmq_extension.ts): it drops the lines between the
-- `extension script: omit` markers, which CREATE EXTENSION does itself or would refuse.
--
-- Known differences from 1.5.1 (docs/sql.md lists them for users): concurrent creators of one
-- queue are serialized here, and queue tables never become members of an extension. Partitioned
-- queues (create_partitioned, pg_partman) are not provided.
--
-- Locking: read and pop take row locks with `for update skip locked`, so concurrent consumers get
-- disjoint messages. set_vt, archive and delete lock rows normally and therefore wait for a
-- concurrent reader's transaction instead of skipping its rows. Queue creation and dropping take a
-- transaction-scoped advisory lock per queue table.
--
-- Clocks: enqueued_at, archived_at, meta.created_at and metrics use now() (transaction time);
-- everything deciding or setting visibility uses clock_timestamp(), so a long transaction that sends
-- and then reads sees its own messages become visible, exactly as with the extension.

-- extension script: omit from here
do $$
begin
  if exists (select from pg_extension where extname = 'pgmq') then
    raise exception 'Cannot install the PGMQ compatibility layer: the pgmq extension is installed';
  end if;
end
$$;

create schema if not exists pgmq;
-- extension script: omit to here

-- One row per queue, name kept as the caller spelled it (table names are lowercased instead).
create table if not exists pgmq.meta (
  queue_name varchar unique not null,
  is_partitioned boolean not null,
  is_unlogged boolean not null,
  created_at timestamp with time zone default now() not null
);

-- The extension lets monitoring roles read every queue; so does this layer.
grant usage on schema pgmq to pg_monitor;
grant select on all tables in schema pgmq to pg_monitor;
grant select on all sequences in schema pgmq to pg_monitor;
alter default privileges in schema pgmq grant select on tables to pg_monitor;
alter default privileges in schema pgmq grant select on sequences to pg_monitor;

-- `create type` has no `if not exists`; a duplicate means an earlier run already made the type.
do $$
begin
  -- Attribute order matters: callers (and `returning *` in pop) rely on it.
  create type pgmq.message_record as (
    msg_id bigint,
    read_ct integer,
    enqueued_at timestamp with time zone,
    vt timestamp with time zone,
    message jsonb,
    headers jsonb
  );
exception when duplicate_object then null;
end
$$;

do $$
begin
  create type pgmq.queue_record as (
    queue_name varchar,
    is_partitioned boolean,
    is_unlogged boolean,
    created_at timestamp with time zone
  );
exception when duplicate_object then null;
end
$$;

do $$
begin
  -- queue_visible_length comes last because PGMQ 1.5 appended it to an existing type.
  create type pgmq.metrics_result as (
    queue_name text,
    queue_length bigint,
    newest_msg_age_sec int,
    oldest_msg_age_sec int,
    total_messages bigint,
    scrape_time timestamp with time zone,
    queue_visible_length bigint
  );
exception when duplicate_object then null;
end
$$;

------------------------------------------------------------------------------------------------
-- Names
------------------------------------------------------------------------------------------------

-- Every function resolves its tables through here. Lowercasing makes `Foo` and `foo` share
-- tables; the character check keeps names from breaking out of the identifiers built from them.
create or replace function pgmq.format_table_name(queue_name text, prefix text)
returns text
language plpgsql
as $$
begin
  if queue_name ~ '\$|;|--|''' then
    raise exception 'queue name contains invalid characters: $, ;, --, or \''';
  end if;
  return lower(prefix || '_' || queue_name);
end;
$$;

-- 47 = 63 (identifier limit) - 16 (longest prefix the extension builds, `template_pgmq_q_`).
-- The text says 48 because 1.5.1 says so (its message is off by one; 1.5.2 corrected it).
create or replace function pgmq.validate_queue_name(queue_name text)
returns void
language plpgsql
as $$
begin
  if length(queue_name) > 47 then
    raise exception 'queue name is too long, maximum length is 48 characters';
  end if;
end;
$$;

------------------------------------------------------------------------------------------------
-- Queue management
------------------------------------------------------------------------------------------------

-- Shared body of create_non_partitioned and create_unlogged (the extension has no such function;
-- sluice must not call it). Only the queue table may be unlogged: the archive stays durable.
create or replace function pgmq._create_queue(queue_name text, is_unlogged boolean)
returns void
language plpgsql
as $$
declare
  qtable text := pgmq.format_table_name(queue_name, 'q');
  atable text := pgmq.format_table_name(queue_name, 'a');
begin
  perform pgmq.validate_queue_name(queue_name);
  -- Two sessions creating the same queue at once would otherwise race inside
  -- `create table if not exists` and one would fail on the catalog's unique index.
  perform pg_advisory_xact_lock(hashtext('pgmq.' || qtable));

  execute format(
    $q$
    create %s table if not exists pgmq.%I (
      msg_id bigint primary key generated always as identity,
      read_ct int default 0 not null,
      enqueued_at timestamp with time zone default now() not null,
      vt timestamp with time zone not null,
      message jsonb,
      headers jsonb
    )
    $q$,
    case when is_unlogged then 'unlogged' else '' end,
    qtable
  );

  execute format(
    $q$
    create table if not exists pgmq.%I (
      msg_id bigint primary key,
      read_ct int default 0 not null,
      enqueued_at timestamp with time zone default now() not null,
      archived_at timestamp with time zone default now() not null,
      vt timestamp with time zone not null,
      message jsonb,
      headers jsonb
    )
    $q$,
    atable
  );

  execute format('create index if not exists %I on pgmq.%I (vt asc)', qtable || '_vt_idx', qtable);
  -- The extension names this index after the queue name as spelled, not lowercased; kept so that
  -- index names match the extension's for the same sequence of calls.
  execute format(
    'create index if not exists %I on pgmq.%I (archived_at)',
    'archived_at_idx_' || queue_name,
    atable
  );

  insert into pgmq.meta (queue_name, is_partitioned, is_unlogged)
  values (_create_queue.queue_name, false, _create_queue.is_unlogged)
  on conflict do nothing;
end;
$$;

create or replace function pgmq.create_non_partitioned(queue_name text)
returns void
language plpgsql
as $$
begin
  perform pgmq._create_queue(queue_name, false);
end;
$$;

create or replace function pgmq.create_unlogged(queue_name text)
returns void
language plpgsql
as $$
begin
  perform pgmq._create_queue(queue_name, true);
end;
$$;

create or replace function pgmq.create(queue_name text)
returns void
language plpgsql
as $$
begin
  perform pgmq.create_non_partitioned(queue_name);
end;
$$;

-- A missing queue raises, with the text 1.5.1 gets from its `alter extension pgmq drop table`
-- (later releases return false with a notice instead); callers that may meet a missing queue check
-- pgmq.meta first.
create or replace function pgmq.drop_queue(queue_name text)
returns boolean
language plpgsql
as $$
declare
  qtable text := pgmq.format_table_name(queue_name, 'q');
  atable text := pgmq.format_table_name(queue_name, 'a');
begin
  perform pg_advisory_xact_lock(hashtext('pgmq.' || qtable));
  if to_regclass(format('pgmq.%I', qtable)) is null then
    raise exception 'relation "pgmq.%" does not exist', qtable using errcode = 'undefined_table';
  end if;
  execute format('drop table if exists pgmq.%I', qtable);
  execute format('drop table if exists pgmq.%I', atable);
  delete from pgmq.meta m where m.queue_name = drop_queue.queue_name;
  return true;
end;
$$;

-- Deprecated in 1.5.1 and kept for callers of the old signature: the flag is ignored (partitioned
-- queues are dropped the same way).
create or replace function pgmq.drop_queue(queue_name text, partitioned boolean)
returns boolean
language plpgsql
as $$
begin
  raise warning 'drop_queue(queue_name, partitioned) is deprecated and will be removed in PGMQ v2.0. Use drop_queue(queue_name) instead.';
  return pgmq.drop_queue(queue_name);
end;
$$;

-- In 1.5.1 this takes the archive table out of the extension's membership, so that dropping the
-- extension keeps it. Tables of this layer never belong to an extension: only the check that the
-- archive exists is left to do.
create or replace function pgmq.detach_archive(queue_name text)
returns void
language plpgsql
as $$
declare
  atable text := pgmq.format_table_name(queue_name, 'a');
begin
  if to_regclass(format('pgmq.%I', atable)) is null then
    raise exception 'relation "pgmq.%" does not exist', atable using errcode = 'undefined_table';
  end if;
end;
$$;

create or replace function pgmq.purge_queue(queue_name text)
returns bigint
language plpgsql
as $$
declare
  deleted bigint;
begin
  execute format('delete from pgmq.%I', pgmq.format_table_name(queue_name, 'q'));
  get diagnostics deleted = row_count;
  return deleted;
end;
$$;

create or replace function pgmq.list_queues()
returns setof pgmq.queue_record
language plpgsql
as $$
begin
  return query select m.queue_name, m.is_partitioned, m.is_unlogged, m.created_at from pgmq.meta m;
end;
$$;

-- total_messages reads the identity sequence, so it counts every message ever sent, including
-- deleted and archived ones; a sequence never called reports 0 rather than its start value.
create or replace function pgmq.metrics(queue_name text)
returns pgmq.metrics_result
language plpgsql
as $$
declare
  qtable text := pgmq.format_table_name(queue_name, 'q');
  result pgmq.metrics_result;
begin
  execute format(
    $q$
    select
      $1,
      q.queue_length,
      q.newest_msg_age_sec,
      q.oldest_msg_age_sec,
      s.total_messages,
      q.scrape_time,
      q.queue_visible_length
    from (
      select
        count(*) as queue_length,
        count(*) filter (where vt <= now()) as queue_visible_length,
        extract(epoch from (now() - max(enqueued_at)))::int as newest_msg_age_sec,
        extract(epoch from (now() - min(enqueued_at)))::int as oldest_msg_age_sec,
        now() as scrape_time
      from pgmq.%I
    ) q,
    (select case when is_called then last_value else 0 end as total_messages from pgmq.%I) s
    $q$,
    qtable,
    qtable || '_msg_id_seq'
  ) into result using queue_name;
  return result;
end;
$$;

create or replace function pgmq.metrics_all()
returns setof pgmq.metrics_result
language plpgsql
as $$
declare
  queue varchar;
begin
  for queue in select m.queue_name from pgmq.meta m loop
    return next pgmq.metrics(queue);
  end loop;
end;
$$;

------------------------------------------------------------------------------------------------
-- Producing
--
-- Each overload runs its own single insert instead of delegating to the most general one: send is
-- on the engine's hot path and a nested plpgsql call per message is measurable. The visibility time
-- is computed once, before the insert, so a whole batch shares one vt.
------------------------------------------------------------------------------------------------

create or replace function pgmq.send(queue_name text, msg jsonb, headers jsonb, delay timestamp with time zone)
returns setof bigint
language plpgsql
as $$
begin
  return query execute format(
    'insert into pgmq.%I (vt, message, headers) values ($1, $2, $3) returning msg_id',
    pgmq.format_table_name(queue_name, 'q')
  ) using delay, msg, headers;
end;
$$;

create or replace function pgmq.send(queue_name text, msg jsonb, headers jsonb, delay integer)
returns setof bigint
language plpgsql
as $$
begin
  return query execute format(
    'insert into pgmq.%I (vt, message, headers) values ($1, $2, $3) returning msg_id',
    pgmq.format_table_name(queue_name, 'q')
  ) using clock_timestamp() + make_interval(secs => delay), msg, headers;
end;
$$;

create or replace function pgmq.send(queue_name text, msg jsonb, delay timestamp with time zone)
returns setof bigint
language plpgsql
as $$
begin
  return query execute format(
    'insert into pgmq.%I (vt, message) values ($1, $2) returning msg_id',
    pgmq.format_table_name(queue_name, 'q')
  ) using delay, msg;
end;
$$;

create or replace function pgmq.send(queue_name text, msg jsonb, delay integer)
returns setof bigint
language plpgsql
as $$
begin
  return query execute format(
    'insert into pgmq.%I (vt, message) values ($1, $2) returning msg_id',
    pgmq.format_table_name(queue_name, 'q')
  ) using clock_timestamp() + make_interval(secs => delay), msg;
end;
$$;

create or replace function pgmq.send(queue_name text, msg jsonb, headers jsonb)
returns setof bigint
language plpgsql
as $$
begin
  return query execute format(
    'insert into pgmq.%I (vt, message, headers) values ($1, $2, $3) returning msg_id',
    pgmq.format_table_name(queue_name, 'q')
  ) using clock_timestamp(), msg, headers;
end;
$$;

create or replace function pgmq.send(queue_name text, msg jsonb)
returns setof bigint
language plpgsql
as $$
begin
  return query execute format(
    'insert into pgmq.%I (vt, message) values ($1, $2) returning msg_id',
    pgmq.format_table_name(queue_name, 'q')
  ) using clock_timestamp(), msg;
end;
$$;

-- All send_batch overloads run the same statement. unnest over two arrays pads the shorter one with
-- nulls (a null headers array counts as empty), which is what the extension does; ordering by the
-- ordinality assigns identity values, and so returns ids, in input order.

create or replace function pgmq.send_batch(
  queue_name text,
  msgs jsonb[],
  headers jsonb[],
  delay timestamp with time zone
)
returns setof bigint
language plpgsql
as $$
begin
  return query execute format(
    $q$
    insert into pgmq.%I (vt, message, headers)
    select $1, b.message, b.headers
    from unnest($2, $3) with ordinality as b(message, headers, ord)
    order by b.ord
    returning msg_id
    $q$,
    pgmq.format_table_name(queue_name, 'q')
  ) using delay, msgs, headers;
end;
$$;

create or replace function pgmq.send_batch(queue_name text, msgs jsonb[], headers jsonb[], delay integer)
returns setof bigint
language plpgsql
as $$
begin
  return query execute format(
    $q$
    insert into pgmq.%I (vt, message, headers)
    select $1, b.message, b.headers
    from unnest($2, $3) with ordinality as b(message, headers, ord)
    order by b.ord
    returning msg_id
    $q$,
    pgmq.format_table_name(queue_name, 'q')
  ) using clock_timestamp() + make_interval(secs => delay), msgs, headers;
end;
$$;

create or replace function pgmq.send_batch(queue_name text, msgs jsonb[], delay timestamp with time zone)
returns setof bigint
language plpgsql
as $$
begin
  return query execute format(
    $q$
    insert into pgmq.%I (vt, message, headers)
    select $1, b.message, b.headers
    from unnest($2, $3) with ordinality as b(message, headers, ord)
    order by b.ord
    returning msg_id
    $q$,
    pgmq.format_table_name(queue_name, 'q')
  ) using delay, msgs, null::jsonb[];
end;
$$;

create or replace function pgmq.send_batch(queue_name text, msgs jsonb[], delay integer)
returns setof bigint
language plpgsql
as $$
begin
  return query execute format(
    $q$
    insert into pgmq.%I (vt, message, headers)
    select $1, b.message, b.headers
    from unnest($2, $3) with ordinality as b(message, headers, ord)
    order by b.ord
    returning msg_id
    $q$,
    pgmq.format_table_name(queue_name, 'q')
  ) using clock_timestamp() + make_interval(secs => delay), msgs, null::jsonb[];
end;
$$;

create or replace function pgmq.send_batch(queue_name text, msgs jsonb[], headers jsonb[])
returns setof bigint
language plpgsql
as $$
begin
  return query execute format(
    $q$
    insert into pgmq.%I (vt, message, headers)
    select $1, b.message, b.headers
    from unnest($2, $3) with ordinality as b(message, headers, ord)
    order by b.ord
    returning msg_id
    $q$,
    pgmq.format_table_name(queue_name, 'q')
  ) using clock_timestamp(), msgs, headers;
end;
$$;

create or replace function pgmq.send_batch(queue_name text, msgs jsonb[])
returns setof bigint
language plpgsql
as $$
begin
  return query execute format(
    $q$
    insert into pgmq.%I (vt, message, headers)
    select $1, b.message, b.headers
    from unnest($2, $3) with ordinality as b(message, headers, ord)
    order by b.ord
    returning msg_id
    $q$,
    pgmq.format_table_name(queue_name, 'q')
  ) using clock_timestamp(), msgs, null::jsonb[];
end;
$$;

------------------------------------------------------------------------------------------------
-- Consuming
------------------------------------------------------------------------------------------------

-- The CTE is the claim fence. It picks at most qty visible rows in msg_id order and locks them,
-- skipping rows another transaction holds; the outer update then touches exactly those rows.
-- An update cannot take a limit itself, and without `skip locked` concurrent readers would queue up
-- behind each other's row locks and then, after the holder commits, re-check and drop those rows,
-- returning fewer messages than available. With the fence, concurrent readers get disjoint sets.
-- An empty conditional (or null, as in the extension) means no filter: `message @> '{}'` is false
-- for non-object messages, so it cannot simply be applied always.
create or replace function pgmq.read(
  queue_name text,
  vt integer,
  qty integer,
  conditional jsonb default '{}'
)
returns setof pgmq.message_record
language plpgsql
as $$
declare
  qtable text := pgmq.format_table_name(queue_name, 'q');
begin
  return query execute format(
    $q$
    with visible as (
      select msg_id
      from pgmq.%I
      where vt <= clock_timestamp()
        and ($3 is null or $3 = '{}'::jsonb or message @> $3)
      order by msg_id
      limit $1
      for update skip locked
    )
    update pgmq.%I m
    set vt = clock_timestamp() + $2, read_ct = m.read_ct + 1
    from visible
    where m.msg_id = visible.msg_id
    returning m.msg_id, m.read_ct, m.enqueued_at, m.vt, m.message, m.headers
    $q$,
    qtable,
    qtable
  ) using qty, make_interval(secs => vt), conditional;
end;
$$;

-- Each attempt is a separate statement, so in read committed it sees messages committed by other
-- sessions since the previous attempt.
create or replace function pgmq.read_with_poll(
  queue_name text,
  vt integer,
  qty integer,
  max_poll_seconds integer default 5,
  poll_interval_ms integer default 100,
  conditional jsonb default '{}'
)
returns setof pgmq.message_record
language plpgsql
as $$
declare
  stop_at timestamp with time zone := clock_timestamp() + make_interval(secs => max_poll_seconds);
begin
  loop
    if clock_timestamp() >= stop_at then
      return;
    end if;
    return query select * from pgmq.read(queue_name, vt, qty, conditional);
    if found then
      return;
    end if;
    perform pg_sleep(poll_interval_ms::numeric / 1000);
  end loop;
end;
$$;

create or replace function pgmq.pop(queue_name text)
returns setof pgmq.message_record
language plpgsql
as $$
declare
  qtable text := pgmq.format_table_name(queue_name, 'q');
begin
  -- Same fence as read: lock the oldest visible row, skipping rows other consumers hold.
  return query execute format(
    $q$
    with oldest as (
      select msg_id
      from pgmq.%I
      where vt <= clock_timestamp()
      order by msg_id
      limit 1
      for update skip locked
    )
    delete from pgmq.%I m
    using oldest
    where m.msg_id = oldest.msg_id
    returning m.msg_id, m.read_ct, m.enqueued_at, m.vt, m.message, m.headers
    $q$,
    qtable,
    qtable
  );
end;
$$;

create or replace function pgmq.set_vt(queue_name text, msg_id bigint, vt integer)
returns setof pgmq.message_record
language plpgsql
as $$
begin
  return query execute format(
    $q$
    update pgmq.%I
    set vt = clock_timestamp() + $2
    where msg_id = $1
    returning msg_id, read_ct, enqueued_at, vt, message, headers
    $q$,
    pgmq.format_table_name(queue_name, 'q')
  ) using msg_id, make_interval(secs => vt);
end;
$$;

------------------------------------------------------------------------------------------------
-- Acknowledging
--
-- No `skip locked` here: a message being read in an open transaction is waited for, then archived
-- or deleted, never silently reported as missing.
------------------------------------------------------------------------------------------------

create or replace function pgmq.archive(queue_name text, msg_id bigint)
returns boolean
language plpgsql
as $$
declare
  moved bigint;
begin
  execute format(
    $q$
    with moved as (
      delete from pgmq.%I
      where msg_id = $1
      returning msg_id, read_ct, enqueued_at, vt, message, headers
    )
    insert into pgmq.%I (msg_id, read_ct, enqueued_at, vt, message, headers)
    select msg_id, read_ct, enqueued_at, vt, message, headers from moved
    returning msg_id
    $q$,
    pgmq.format_table_name(queue_name, 'q'),
    pgmq.format_table_name(queue_name, 'a')
  ) into moved using msg_id;
  return moved is not null;
end;
$$;

create or replace function pgmq.archive(queue_name text, msg_ids bigint[])
returns setof bigint
language plpgsql
as $$
begin
  return query execute format(
    $q$
    with moved as (
      delete from pgmq.%I
      where msg_id = any($1)
      returning msg_id, read_ct, enqueued_at, vt, message, headers
    )
    insert into pgmq.%I (msg_id, read_ct, enqueued_at, vt, message, headers)
    select msg_id, read_ct, enqueued_at, vt, message, headers from moved
    returning msg_id
    $q$,
    pgmq.format_table_name(queue_name, 'q'),
    pgmq.format_table_name(queue_name, 'a')
  ) using msg_ids;
end;
$$;

create or replace function pgmq.delete(queue_name text, msg_id bigint)
returns boolean
language plpgsql
as $$
declare
  deleted bigint;
begin
  execute format(
    'delete from pgmq.%I where msg_id = $1 returning msg_id',
    pgmq.format_table_name(queue_name, 'q')
  ) into deleted using msg_id;
  return deleted is not null;
end;
$$;

create or replace function pgmq.delete(queue_name text, msg_ids bigint[])
returns setof bigint
language plpgsql
as $$
begin
  return query execute format(
    'delete from pgmq.%I where msg_id = any($1) returning msg_id',
    pgmq.format_table_name(queue_name, 'q')
  ) using msg_ids;
end;
$$;
