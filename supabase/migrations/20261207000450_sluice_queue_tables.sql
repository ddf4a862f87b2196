-- Queue tables only sluice's owner can extend (issue 43 finding 2).
--
-- 1. Privileges beyond rows. Supabase Queues' grants (`alter default privileges in schema pgmq
--    grant all on tables to ...`, run as postgres) hand TRIGGER and REFERENCES on every new table
--    in pgmq to their roles, sluice's queue tables included. A grantee's trigger on pgmq.q_<queue>
--    then runs as whoever inserts: as the definer inside start_run and compilation. A foreign key
--    referencing a queue table puts its RI triggers on it and blocks the queue's drop. Now every
--    queue table sluice creates loses TRIGGER and REFERENCES for every role but its owner at
--    creation (sluice.create_queue), grant_access takes them from every sluice queue table, and
--    this migration takes them from the queue tables that exist (and names, in a WARNING, each
--    trigger on one whose function another role owns: revoking leaves it). SELECT, INSERT, UPDATE
--    and DELETE stay as granted.
-- 2. Pre-made tables. A role with CREATE on schema pgmq could create pgmq.q_<queue> before any
--    flow used the name; compilation checked only pgmq.meta, and PGMQ's `create table if not
--    exists` adopted the table, its owner and triggers included. Now sluice.create_queue refuses a
--    queue whose table exists while pgmq.meta has no such queue, and a queue table, however it
--    came to exist, that the role owning sluice's functions does not own.
--
-- Redefined here (whole, create or replace): create_queue, grant_access.

-- Takes TRIGGER and REFERENCES on the queue's two tables (pgmq.q_<queue>, pgmq.a_<queue>) from
-- PUBLIC and every role but the table's owner. Run by that owner (the definer compilation, or the
-- migrating role in grant_access); a missing table is skipped.
create function sluice.restrict_queue_tables(queue text)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  v_table regclass;
  v_grantee text;
begin
  foreach v_table in array array[
    to_regclass(format('pgmq.%I', 'q_' || lower(restrict_queue_tables.queue))),
    to_regclass(format('pgmq.%I', 'a_' || lower(restrict_queue_tables.queue)))
  ] loop
    continue when v_table is null;
    for v_grantee in
      select distinct case when a.grantee = 0 then 'public' else a.grantee::regrole::text end
      from pg_class c
      cross join lateral aclexplode(c.relacl) a
      where c.oid = v_table
        and a.grantee <> c.relowner
        and a.privilege_type in ('TRIGGER', 'REFERENCES')
      order by 1
    loop
      -- cascade: also what a holder of the grant option passed on, which the owner's revoke
      -- from that holder would otherwise refuse to leave behind.
      execute format('revoke trigger, references on table %s from %s cascade', v_table, v_grantee);
    end loop;
  end loop;
end;
$$;

-- Creates a flow's queue inside the definer compilation (current_user: the role owning sluice's
-- functions). Refuses a table of the queue's name that PGMQ's registry does not account for
-- (made in advance by a role with CREATE on schema pgmq), and, after pgmq.create, any queue table
-- that role does not own (one a concurrent role created between the check and pgmq.create's
-- `create table if not exists`); then restricts the new tables (sluice.restrict_queue_tables).
create or replace function sluice.create_queue(flow_slug text, queue text)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  v_name text;
  v_owner text;
begin
  foreach v_name in array array['q_' || lower(create_queue.queue), 'a_' || lower(create_queue.queue)]
  loop
    select c.relowner::regrole::text into v_owner
    from pg_class c
    where c.relnamespace = 'pgmq'::regnamespace and c.relname = v_name;
    if v_owner is not null and not exists (
      select 1 from pgmq.meta m where lower(m.queue_name) = lower(create_queue.queue)
    ) then
      raise exception 'Cannot compile flow "%": queue "%" cannot be created: table pgmq.% already exists (owned by role "%") but PGMQ''s registry pgmq.meta has no queue "%"; sluice never adopts a table it did not create',
        create_queue.flow_slug, create_queue.queue, v_name, v_owner, create_queue.queue
        using errcode = 'duplicate_table',
          hint = format('Find out whose table pgmq.%s is and drop it, or deploy the flow under another slug', v_name);
    end if;
  end loop;

  begin
    perform pgmq.create(create_queue.queue);
  exception when insufficient_privilege then
    perform sluice.queue_owner_error('compile', create_queue.flow_slug, create_queue.queue, sqlerrm);
    raise;
  end;

  foreach v_name in array array['q_' || lower(create_queue.queue), 'a_' || lower(create_queue.queue)]
  loop
    select c.relowner::regrole::text into v_owner
    from pg_class c
    where c.relnamespace = 'pgmq'::regnamespace and c.relname = v_name;
    if v_owner is distinct from current_user::text then
      raise exception 'Cannot compile flow "%": queue "%" cannot be used: its table pgmq.% is owned by role "%", not by role "%", which owns sluice''s functions; sluice never uses a queue table another role can alter',
        create_queue.flow_slug, create_queue.queue, v_name, coalesce(v_owner, '(none)'), current_user
        using errcode = 'insufficient_privilege',
          hint = format('Find out whose table pgmq.%s is and drop it, or deploy the flow under another slug', v_name);
    end if;
  end loop;
  perform sluice.restrict_queue_tables(create_queue.queue);
end;
$$;

-- Grants a producer's and a worker's privileges to one role: on what exists now, and (through
-- default privileges of the role running this) on what later migrations and queue creation add.
-- Run by the role that owns sluice's objects (the one that runs the migrations). Idempotent.
-- Also takes TRIGGER and REFERENCES on every sluice queue table from every role but its owner
-- (sluice.restrict_queue_tables), whoever granted them.
create or replace function sluice.grant_access(grantee name)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  role_name text := quote_ident(grantee);
begin
  if not exists (select 1 from pg_roles where rolname = grantee) then
    raise exception 'Cannot grant sluice access to role %: no such role', quote_literal(grantee)
      using errcode = 'undefined_object';
  end if;
  execute format('grant usage on schema sluice, pgmq to %s', role_name);
  execute format('grant execute on all routines in schema sluice to %s', role_name);
  execute format(
    'grant select, insert, update, delete on all tables in schema sluice, pgmq to %s', role_name);
  execute format('grant usage, select, update on all sequences in schema sluice, pgmq to %s',
    role_name);
  execute format('alter default privileges in schema sluice grant execute on functions to %s',
    role_name);
  execute format(
    'alter default privileges in schema sluice, pgmq grant select, insert, update, delete on tables to %s',
    role_name);
  execute format(
    'alter default privileges in schema sluice, pgmq grant usage, select, update on sequences to %s',
    role_name);
  -- The queue registries are written only by the definer compilation and deletion: a row forged
  -- by a grantee would make delete_flow_and_data drop a queue that is not its flow's.
  execute format('revoke insert, update, delete, truncate on sluice.queues, pgmq.meta from %s',
    role_name);
  perform sluice.restrict_queue_tables(q.queue_name) from sluice.queues q;
  -- Granting stays with the owner.
  execute format('revoke execute on function sluice.grant_access(name) from %s', role_name);
end;
$$;

select sluice.restrict_queue_tables(q.queue_name) from sluice.queues q;

-- Revoking TRIGGER leaves a trigger made before in place. One whose function another role owns
-- is what a grantee would have left there: name each, for the migrating role to decide.
do $$
declare
  v_trigger record;
begin
  for v_trigger in
    select c.oid::regclass::text as table_name, t.tgname, p.proowner::regrole::text as owner
    from sluice.queues q
    join pg_class c
      on c.relnamespace = 'pgmq'::regnamespace
      and c.relname in ('q_' || q.queue_name, 'a_' || q.queue_name)
    join pg_trigger t on t.tgrelid = c.oid and not t.tgisinternal
    join pg_proc p on p.oid = t.tgfoid
    where p.proowner <> c.relowner
    order by 1, 2
  loop
    raise warning 'Queue table % has trigger "%", whose function role "%" owns: it runs as whoever writes the queue, sluice''s security definer functions included',
      v_trigger.table_name, v_trigger.tgname, v_trigger.owner
      using hint = format('Drop it unless you trust role "%s": drop trigger %I on %s',
        v_trigger.owner, v_trigger.tgname, v_trigger.table_name);
  end loop;
end;
$$;

revoke all on all routines in schema sluice from public;
