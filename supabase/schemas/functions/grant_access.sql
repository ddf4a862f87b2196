-- sluice.grant_access, as the migrations create it (last defined in supabase/migrations/20261207000450_sluice_queue_tables.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Grants a producer's and a worker's privileges to one role: on what exists now, and (through
-- default privileges of the role running this) on what later migrations and queue creation add.
-- Run by the role that owns sluice's objects (the one that runs the migrations). Idempotent.
-- Also takes TRIGGER and REFERENCES on every sluice queue table from every role but its owner
-- (sluice.restrict_queue_tables), whoever granted them.
CREATE OR REPLACE FUNCTION sluice.grant_access(grantee name) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
