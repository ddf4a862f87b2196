-- sluice.grant_access, as the migrations create it (last defined in supabase/migrations/20261207235622_sluice_flow_access_checks.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Grants a producer's and a worker's privileges to one role, on every flow: on what exists now,
-- and (through default privileges of the role running this) on what later migrations and queue
-- creation add. Run by the role that owns sluice's objects (the one that runs the migrations).
-- Idempotent; a scoped grant of the role (grant_access(role, flows)) becomes unscoped.
-- Also takes TRIGGER and REFERENCES on every sluice queue table from every role but its owner
-- (sluice.restrict_queue_tables), whoever granted them.
CREATE OR REPLACE FUNCTION sluice.grant_access(grantee name) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform sluice.grant_access(grant_access.grantee, null::text[]);
end;
$$;

-- Grants a producer's and a worker's privileges to one role, limited to a set of flows
-- (docs/privileges.md#per-flow-access): each entry a flow slug (also covering the flows the alias
-- of that name has pointed at) or a slug prefix ending in `*`; null means every flow. The scope is
-- recorded in sluice.access_grants, which row-level security and the entry points read. A scoped
-- role gets no privilege on pgmq's tables beyond reading pgmq.meta, except on the queue tables of
-- its flows (now, and as later compilations create them: sluice.grant_queue_access). Bad input is
-- refused before anything is granted, naming it. Idempotent: a second call replaces the scope.
CREATE OR REPLACE FUNCTION sluice.grant_access(grantee name, flows text[]) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  role_name text := quote_ident(grantee);
  v_bad text;
  v_oid oid;
begin
  select r.oid into v_oid from pg_roles r where r.rolname = grantee;
  if v_oid is null then
    raise exception 'Cannot grant sluice access to role %: no such role', quote_literal(grantee)
      using errcode = 'undefined_object';
  end if;
  if flows is not null then
    if cardinality(flows) = 0 then
      raise exception 'Cannot grant sluice access to role %: the list of flows is empty (null grants every flow)',
        quote_literal(grantee)
        using errcode = 'invalid_parameter_value';
    end if;
    select coalesce(e, 'null') into v_bad from unnest(flows) e
    where not coalesce(sluice.is_valid_slug(e)
      or (e ~ '^[A-Za-z][A-Za-z0-9_]*\*$' and char_length(e) <= 129), false)
    limit 1;
    if found then
      raise exception 'Cannot grant sluice access to role %: % is neither a flow slug nor a slug prefix ending in *',
        quote_literal(grantee), v_bad
        using errcode = 'invalid_parameter_value';
    end if;
  end if;

  insert into sluice.access_grants as g (role_oid, flows) values (v_oid, grant_access.flows)
  on conflict (role_oid) do update set flows = excluded.flows, granted_at = now();

  execute format('grant usage on schema sluice, pgmq to %s', role_name);
  execute format('grant execute on all routines in schema sluice to %s', role_name);
  execute format(
    'grant select, insert, update, delete on all tables in schema sluice to %s', role_name);
  execute format('grant usage, select, update on all sequences in schema sluice to %s',
    role_name);
  execute format('alter default privileges in schema sluice grant execute on functions to %s',
    role_name);
  execute format(
    'alter default privileges in schema sluice grant select, insert, update, delete on tables to %s',
    role_name);
  execute format(
    'alter default privileges in schema sluice grant usage, select, update on sequences to %s',
    role_name);
  if flows is null then
    execute format('grant select, insert, update, delete on all tables in schema pgmq to %s',
      role_name);
    execute format(
      'alter default privileges in schema pgmq grant select, insert, update, delete on tables to %s',
      role_name);
    execute format('grant usage, select, update on all sequences in schema pgmq to %s', role_name);
    execute format(
      'alter default privileges in schema pgmq grant usage, select, update on sequences to %s',
      role_name);
  else
    -- Only its flows' queue tables: none by default, each granted as it is created.
    -- Nor another queue's sequence, whose setval would break that queue's sends.
    execute format('revoke all on all tables in schema pgmq from %s', role_name);
    execute format('revoke all on all sequences in schema pgmq from %s', role_name);
    execute format(
      'alter default privileges in schema pgmq revoke all on tables from %s', role_name);
    execute format(
      'alter default privileges in schema pgmq revoke all on sequences from %s', role_name);
    execute format('grant select on pgmq.meta to %s', role_name);
    perform sluice.grant_queue_access(q.flow_slug, q.queue_name)
    from (
      select q.owner_flow_slug as flow_slug, q.queue_name from sluice.queues q
      where q.owner_flow_slug is not null
      union
      select s.flow_slug, s.queue_name from sluice.steps s where s.queue_name is not null
    ) q;
  end if;
  -- The queue registries are written only by the definer compilation and deletion: a row forged
  -- by a grantee would make delete_flow_and_data drop a queue that is not its flow's. The grants
  -- themselves only by the owner.
  execute format('revoke insert, update, delete, truncate on sluice.queues, pgmq.meta from %s',
    role_name);
  execute format('revoke all on sluice.access_grants from %s', role_name);
  perform sluice.restrict_queue_tables(q.queue_name) from sluice.queues q;
  -- Granting stays with the owner.
  execute format('revoke execute on function sluice.grant_access(name) from %s', role_name);
  execute format('revoke execute on function sluice.grant_access(name, text[]) from %s',
    role_name);
end;
$_$;
