-- sluice.create_queue, as the migrations create it (last defined in supabase/migrations/20261207000450_sluice_queue_tables.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Creates a flow's queue inside the definer compilation (current_user: the role owning sluice's
-- functions). Refuses a table of the queue's name that PGMQ's registry does not account for
-- (made in advance by a role with CREATE on schema pgmq), and, after pgmq.create, any queue table
-- that role does not own (one a concurrent role created between the check and pgmq.create's
-- `create table if not exists`); then restricts the new tables (sluice.restrict_queue_tables).
CREATE OR REPLACE FUNCTION sluice.create_queue(flow_slug text, queue text) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
