-- Per-flow access (issue 43 finding 5, docs/privileges.md#per-flow-access): a grant can be limited
-- to a set of flows. `sluice.grant_access(role, flows)` records the scope in sluice.access_grants;
-- row-level security on every sluice table hides (and refuses to write) the rows of other flows
-- for a scoped role, the views read with their caller's rights, queue tables are granted per flow,
-- and the entry points refuse another flow's things by name (SQLSTATE SLA01).
--
-- A scope entry is a flow slug (`orders`), which also covers the flows the alias of that name has
-- pointed at, or a slug prefix ending in `*` (`billing_*`), which covers every flow and alias whose
-- name starts with it (new versions included). A role with no row, and a row whose flows are null
-- (grant_access(role) as in 0.1.0), keeps the unscoped access of before; a role with no row of its
-- own takes the scopes of the granted roles it inherits from.
--
-- Tables, policies and the helper routines first; the routines that enforce the scope are
-- redefined in the next migration.

create table sluice.access_grants (
  role_oid oid primary key,
  flows text[],
  granted_at timestamptz not null default now(),
  constraint access_grants_flows_check check (flows is null or cardinality(flows) >= 1)
);

comment on table sluice.access_grants is
  'The flows each role granted sluice access may reach (null: every flow), as flow slugs or slug prefixes ending in *; written only by grant_access.';

-- Only the owner reads or writes it: no policy, so row-level security refuses every other role,
-- whatever default privileges granted on it.
alter table sluice.access_grants enable row level security;
do $$
declare
  v_grantee text;
begin
  for v_grantee in
    select distinct a.grantee::regrole::text
    from pg_class c cross join lateral aclexplode(c.relacl) a
    where c.oid = 'sluice.access_grants'::regclass and a.grantee <> c.relowner and a.grantee <> 0
  loop
    execute format('revoke all on sluice.access_grants from %s', v_grantee);
  end loop;
end;
$$;
revoke all on sluice.access_grants from public;

-- Whether a scope (from sluice.access_scope; null: unscoped) covers a flow slug or alias name.
create function sluice.scope_covers(scope text[], name text)
returns boolean
language sql
immutable
set search_path = pg_catalog, pg_temp
as $$
  select scope is null or exists (
    select 1 from pg_catalog.unnest(scope) p
    where p = name
      or (pg_catalog.right(p, 1) = '*'
        and pg_catalog.starts_with(name, pg_catalog.left(p, -1)))
  )
$$;

-- The scope of a role: null when unscoped (also a superuser, a BYPASSRLS role and the owner of
-- sluice's objects), else its entries plus the concrete flows the aliases it covers have pointed
-- at. A role with no grant of its own takes those of the granted roles it inherits from (unscoped
-- if any is, or none exists); a role that does not exist gets nothing.
-- Security definer: it reads access_grants and the alias history, which its callers may not.
create function sluice.access_scope(role_name name)
returns text[]
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_oid oid;
  v_found boolean := false;
  v_unscoped boolean := false;
  v_entries text[] := '{}';
  v_row sluice.access_grants;
begin
  select r.oid into v_oid from pg_catalog.pg_roles r where r.rolname = access_scope.role_name;
  if v_oid is null then
    return '{}';
  end if;
  -- A superuser, a role that bypasses row-level security and the owner of sluice's objects reach
  -- everything (pg_has_role below would count a superuser a member of every role).
  if exists (select 1 from pg_catalog.pg_roles r where r.oid = v_oid
      and (r.rolsuper or r.rolbypassrls))
    or v_oid = (select n.nspowner from pg_catalog.pg_namespace n where n.nspname = 'sluice')
  then
    return null;
  end if;
  select * into v_row from sluice.access_grants g where g.role_oid = v_oid;
  if found then
    v_found := true;
    v_unscoped := v_row.flows is null;
    v_entries := coalesce(v_row.flows, '{}');
  else
    for v_row in
      select g.* from sluice.access_grants g
      where g.role_oid <> v_oid and pg_catalog.pg_has_role(v_oid, g.role_oid, 'USAGE')
    loop
      v_found := true;
      v_unscoped := v_unscoped or v_row.flows is null;
      v_entries := v_entries || coalesce(v_row.flows, '{}');
    end loop;
  end if;
  if not v_found or v_unscoped then
    return null;
  end if;
  return v_entries || coalesce((
    select pg_catalog.array_agg(distinct h.flow_slug)
    from sluice.alias_history h
    where sluice.scope_covers(v_entries, h.alias)
  ), '{}');
end;
$$;

-- The role a check speaks for: the caller, also inside sluice's security definer functions (where
-- current_user is their owner), there the session's role (SET ROLE, else the login role).
create function sluice.caller_role()
returns name
language sql
stable
set search_path = pg_catalog, pg_temp
as $$
  select case
    when current_user = (select n.nspowner::regrole::name from pg_catalog.pg_namespace n
      where n.nspname = 'sluice')
    then coalesce(nullif(pg_catalog.current_setting('role'), 'none')::name,
      session_user)
    else current_user
  end
$$;

-- Refuses a flow (slug or alias name) outside the caller's scope, naming both (SLA01, detail
-- {role, flow, action, flows}).
create function sluice.check_flow_access(flow_ref text, action text)
returns void
language plpgsql
stable
set search_path = pg_catalog, pg_temp
as $$
declare
  v_role name := sluice.caller_role();
  v_scope text[] := sluice.access_scope(v_role);
begin
  if v_scope is null or sluice.scope_covers(v_scope, check_flow_access.flow_ref) then
    return;
  end if;
  raise exception 'Cannot %: role "%" has no access to flow "%" (its sluice grant covers %)',
    check_flow_access.action, v_role, check_flow_access.flow_ref,
    coalesce((select pg_catalog.string_agg(pg_catalog.format('"%s"', e), ', ')
      from pg_catalog.unnest(v_scope) e), 'no flow')
    using errcode = 'SLA01',
      detail = pg_catalog.json_build_object('role', v_role, 'flow', check_flow_access.flow_ref,
        'action', check_flow_access.action)::text,
      hint = 'The owner of sluice''s objects widens a grant: select sluice.grant_access(role, flows)';
end;
$$;

-- Refuses a run of a flow outside the caller's scope (check_flow_access on its flow). Security
-- definer: the run is invisible to such a caller. A run that does not exist passes: the caller
-- reports that itself.
create function sluice.check_run_access(run_id uuid, action text)
returns void
language plpgsql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
declare
  v_flow text;
begin
  select r.flow_slug into v_flow from sluice.runs r where r.run_id = check_run_access.run_id;
  if v_flow is not null then
    perform sluice.check_flow_access(v_flow, check_run_access.action);
  end if;
end;
$$;

-- Whether a signal's sender may complete a wait of the flow (its scope covers the flow). Security
-- definer: it reads the sender's grant.
create function sluice.sender_covers(sender text, flow_slug text)
returns boolean
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
  select sluice.scope_covers(sluice.access_scope(sender_covers.sender::name),
    sender_covers.flow_slug)
$$;

-- Whether a worker function serves a flow outside a scope (a worker of it registered for one).
-- Security definer: the workers of other flows are invisible to a scoped caller.
create function sluice.function_outside_scope(function_name text, scope text[])
returns boolean
language sql
stable
security definer
set search_path = pg_catalog, pg_temp
as $$
  select scope is not null and exists (
    select 1 from sluice.workers w
    where w.function_name = function_outside_scope.function_name
      and not sluice.scope_covers(scope, w.flow_slug)
  )
$$;

-- Gives the scoped roles whose scope covers a flow the queue's two tables and read access to its
-- message id sequence (unscoped grantees hold every queue table through default privileges
-- already).
create function sluice.grant_queue_access(flow_slug text, queue text)
returns void
language plpgsql
set search_path = pg_catalog, pg_temp
as $$
declare
  v_role text;
  v_table regclass;
begin
  for v_role in
    select g.role_oid::regrole::text from sluice.access_grants g
    where g.flows is not null
      and sluice.scope_covers(sluice.access_scope(g.role_oid::regrole::name),
        grant_queue_access.flow_slug)
  loop
    foreach v_table in array array[
      pg_catalog.to_regclass(pg_catalog.format('pgmq.%I', 'q_' || pg_catalog.lower(grant_queue_access.queue))),
      pg_catalog.to_regclass(pg_catalog.format('pgmq.%I', 'a_' || pg_catalog.lower(grant_queue_access.queue)))
    ] loop
      continue when v_table is null;
      execute pg_catalog.format('grant select, insert, update, delete on table %s to %s', v_table,
        v_role);
    end loop;
    -- Reading its message count (pgmq.metrics, sluice.queue_health); no setval.
    v_table := pg_catalog.to_regclass(pg_catalog.format('pgmq.%I',
      'q_' || pg_catalog.lower(grant_queue_access.queue) || '_msg_id_seq'));
    if v_table is not null then
      execute pg_catalog.format('grant select on sequence %s to %s', v_table, v_role);
    end if;
  end loop;
end;
$$;

-- Row-level security: a scoped role sees and writes only its flows' rows. The scope is computed
-- once per statement (the scalar subquery), and an unscoped role passes on it alone.
alter table sluice.flows enable row level security;
create policy flow_access on sluice.flows
  using ((select sluice.access_scope(current_user)) is null
    or sluice.scope_covers((select sluice.access_scope(current_user)), flow_slug));

alter table sluice.steps enable row level security;
create policy flow_access on sluice.steps
  using ((select sluice.access_scope(current_user)) is null
    or sluice.scope_covers((select sluice.access_scope(current_user)), flow_slug));

alter table sluice.deps enable row level security;
create policy flow_access on sluice.deps
  using ((select sluice.access_scope(current_user)) is null
    or sluice.scope_covers((select sluice.access_scope(current_user)), flow_slug));

alter table sluice.runs enable row level security;
create policy flow_access on sluice.runs
  using ((select sluice.access_scope(current_user)) is null
    or sluice.scope_covers((select sluice.access_scope(current_user)), flow_slug));

alter table sluice.step_states enable row level security;
create policy flow_access on sluice.step_states
  using ((select sluice.access_scope(current_user)) is null
    or sluice.scope_covers((select sluice.access_scope(current_user)), flow_slug));

alter table sluice.step_tasks enable row level security;
create policy flow_access on sluice.step_tasks
  using ((select sluice.access_scope(current_user)) is null
    or sluice.scope_covers((select sluice.access_scope(current_user)), flow_slug));

alter table sluice.workers enable row level security;
create policy flow_access on sluice.workers
  using ((select sluice.access_scope(current_user)) is null
    or sluice.scope_covers((select sluice.access_scope(current_user)), flow_slug));

alter table sluice.idempotency_keys enable row level security;
create policy flow_access on sluice.idempotency_keys
  using ((select sluice.access_scope(current_user)) is null
    or sluice.scope_covers((select sluice.access_scope(current_user)), flow_ref));

alter table sluice.schedules enable row level security;
create policy flow_access on sluice.schedules
  using ((select sluice.access_scope(current_user)) is null
    or sluice.scope_covers((select sluice.access_scope(current_user)), target));

alter table sluice.schedule_ticks enable row level security;
create policy flow_access on sluice.schedule_ticks
  using ((select sluice.access_scope(current_user)) is null
    or exists (select 1 from sluice.schedules s where s.schedule_name = schedule_ticks.schedule_name));

-- An alias is its name's; writing one also needs access to the flow it points at.
alter table sluice.aliases enable row level security;
create policy flow_access on sluice.aliases
  using ((select sluice.access_scope(current_user)) is null
    or sluice.scope_covers((select sluice.access_scope(current_user)), alias))
  with check ((select sluice.access_scope(current_user)) is null
    or (sluice.scope_covers((select sluice.access_scope(current_user)), alias)
      and sluice.scope_covers((select sluice.access_scope(current_user)), flow_slug)));

alter table sluice.alias_history enable row level security;
create policy flow_access on sluice.alias_history
  using ((select sluice.access_scope(current_user)) is null
    or sluice.scope_covers((select sluice.access_scope(current_user)), alias))
  with check ((select sluice.access_scope(current_user)) is null
    or (sluice.scope_covers((select sluice.access_scope(current_user)), alias)
      and sluice.scope_covers((select sluice.access_scope(current_user)), flow_slug)));

-- A private queue is its flow's; a shared (routed) one is visible to the teams of the flows using it.
alter table sluice.queues enable row level security;
create policy flow_access on sluice.queues
  using ((select sluice.access_scope(current_user)) is null
    or sluice.scope_covers((select sluice.access_scope(current_user)), owner_flow_slug)
    or (ownership = 'shared'
      and exists (select 1 from sluice.steps s where s.queue_name = queues.queue_name)));

-- A signal names no flow: a scoped role sees the signals it sent and those of unscoped senders,
-- and sends only as itself. Which waits a signal completes is the sender's scope (send_signal
-- sees only the sender's waiting steps; begin_wait takes a buffered signal only from a sender
-- whose scope covers the flow).
alter table sluice.signals enable row level security;
create policy flow_access on sluice.signals
  using ((select sluice.access_scope(current_user)) is null
    or sent_by = current_user::text
    or sluice.access_scope(sent_by::name) is null)
  with check ((select sluice.access_scope(current_user)) is null or sent_by = current_user::text);

-- A worker function is its workers' flows'.
alter table sluice.worker_functions enable row level security;
create policy flow_access on sluice.worker_functions
  using (not sluice.function_outside_scope(function_name, (select sluice.access_scope(current_user))));

-- The views read with their caller's rights, so the policies above apply to them too.
alter view sluice.live_workers set (security_invoker = true);
alter view sluice.queue_health set (security_invoker = true);
alter view sluice.route_coverage set (security_invoker = true);
alter view sluice.version_drain set (security_invoker = true);
alter view sluice.worker_function_drain set (security_invoker = true);
alter view sluice.worker_function_status set (security_invoker = true);

revoke all on all routines in schema sluice from public;
