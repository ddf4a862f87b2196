-- sluice.restrict_queue_tables, as the migrations create it (last defined in supabase/migrations/20261207000450_sluice_queue_tables.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Takes TRIGGER and REFERENCES on the queue's two tables (pgmq.q_<queue>, pgmq.a_<queue>) from
-- PUBLIC and every role but the table's owner. Run by that owner (the definer compilation, or the
-- migrating role in grant_access); a missing table is skipped.
CREATE OR REPLACE FUNCTION sluice.restrict_queue_tables(queue text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
