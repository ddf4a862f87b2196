-- sluice.grant_queue_access, as the migrations create it (last defined in supabase/migrations/20261207233000_sluice_flow_access.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Gives the scoped roles whose scope covers a flow the queue's two tables and read access to its
-- message id sequence (unscoped grantees hold every queue table through default privileges
-- already).
CREATE OR REPLACE FUNCTION sluice.grant_queue_access(flow_slug text, queue text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
