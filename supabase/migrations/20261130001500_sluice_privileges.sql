-- Privileges. PostgreSQL gives PUBLIC the EXECUTE privilege on every new function; here nothing in
-- schema sluice stays open to PUBLIC (functions, tables, views, sequences), and access is granted
-- to named roles only, through sluice.grant_access().
--
-- Per-schema default privileges can add to PostgreSQL's built-in ones but not take PUBLIC's
-- EXECUTE away (only a database-wide default could, and that would reach the user's own
-- functions too). So every later migration that creates a function in schema sluice ends with
-- `revoke all on all routines in schema sluice from public;`, and the test suite fails when any
-- sluice function is executable by PUBLIC. Grants to named roles do follow new objects: see
-- sluice.grant_access().
--
-- Queue DDL (pgmq.create, pgmq.drop_queue) runs only inside two security definer functions owned
-- by the role that ran the migrations, sluice.ensure_flow_compiled and sluice.delete_flow_and_data
-- (set search_path = pg_catalog, pg_temp; every reference schema-qualified): the real extension
-- lets only its owner create queues (ALTER EXTENSION pgmq ADD TABLE), and queue tables are owned by
-- that role, never by a granted role, so no granted role can put a trigger (or anything else that
-- runs) on a table a definer function writes. The browser's start_run and read_run_events are
-- definer too (20261130001700). Everything else runs with its caller's privileges, so a producer
-- and a worker need: execute on sluice's functions, read and write on sluice's tables and pgmq's
-- queue tables (`start_flow` sends messages, `complete_tasks` archives them). No create on schema
-- pgmq. A role holding none of them, even with usage on both schemas, can neither read nor call
-- anything that touches sluice's data or queues.
--
-- pgmq's own functions keep the EXECUTE that PUBLIC holds on them in the real extension (the
-- compat layer matches it): each of them works on queue tables or pgmq.meta, which PUBLIC cannot
-- read or write, and revoking it would break other users of a shared pgmq (Supabase Queues).

-- Queue DDL for the definer compilation and deletion. The real extension adds every queue table
-- to itself (ALTER EXTENSION pgmq ADD TABLE), which only the extension's owner may do; when the
-- role that owns sluice's functions (current_user inside the definer) is not that owner, the raw
-- `must be owner of extension pgmq` (or `permission denied for schema pgmq`) becomes an error
-- naming both roles and what to do. Any other failure, and every failure where no extension pgmq
-- exists (the compat layer), is raised unchanged. `action` is "compile" or "delete".
create function sluice.queue_owner_error(action text, flow_slug text, queue text, cause text)
returns void
language plpgsql
as $$
declare
  v_owner text;
begin
  select e.extowner::regrole::text into v_owner from pg_catalog.pg_extension e
  where e.extname = 'pgmq';
  if v_owner is null or v_owner = current_user::text then
    return;
  end if;
  raise exception 'Cannot % flow "%": queue "%" cannot be %: extension pgmq is owned by role "%", but sluice''s functions are owned by role "%", and only the extension''s owner may create or drop queues',
    action, flow_slug, queue, case when action = 'compile' then 'created' else 'dropped' end,
    v_owner, current_user
    using errcode = 'insufficient_privilege', detail = cause,
      hint = format('Run the sluice migrations as role "%s", the owner of extension pgmq', v_owner);
end;
$$;

create function sluice.create_queue(flow_slug text, queue text)
returns void
language plpgsql
as $$
begin
  perform pgmq.create(create_queue.queue);
exception when insufficient_privilege then
  perform sluice.queue_owner_error('compile', create_queue.flow_slug, create_queue.queue, sqlerrm);
  raise;
end;
$$;

create function sluice.drop_queue(flow_slug text, queue text)
returns void
language plpgsql
as $$
begin
  perform pgmq.drop_queue(drop_queue.queue);
exception when insufficient_privilege then
  perform sluice.queue_owner_error('delete', drop_queue.flow_slug, drop_queue.queue, sqlerrm);
  raise;
end;
$$;

revoke all on all routines in schema sluice from public;
revoke all on all tables in schema sluice from public;
revoke all on all sequences in schema sluice from public;

-- Grants a producer's and a worker's privileges to one role: on what exists now, and (through
-- default privileges of the role running this) on what later migrations and queue creation add.
-- Run by the role that owns sluice's objects (the one that runs the migrations). Idempotent.
create function sluice.grant_access(grantee name)
returns void
language plpgsql
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
  -- Granting stays with the owner.
  execute format('revoke execute on function sluice.grant_access(name) from %s', role_name);
end;
$$;

revoke execute on function sluice.grant_access(name) from public;

-- On Supabase, producers and workers connect as (or switch to) service_role; anon and
-- authenticated get nothing. Elsewhere, run `select sluice.grant_access('<role>')`.
do $$
begin
  if exists (select 1 from pg_roles where rolname = 'service_role') then
    perform sluice.grant_access('service_role');
  end if;
end;
$$;
