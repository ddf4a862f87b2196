-- sluice.note_freed_slot, as the migrations create it (last defined in supabase/migrations/20261207232321_sluice_concurrency_limits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Trigger of step_tasks (after insert or update of a limited task that was held, or that gave up
-- its slot): notes the task's key in a transaction-local setting, for the commit to release
-- (sluice.release_noted_slots). Noting instead of releasing at once lets the commit take the key
-- locks of a whole transaction in one order: two transactions that each free slots of several
-- keys never wait on each other in a cycle.
CREATE OR REPLACE FUNCTION sluice.note_freed_slot() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  perform set_config('sluice.noted_slots',
    coalesce(current_setting('sluice.noted_slots', true), '')
      || jsonb_build_array(new.flow_slug, new.step_slug, new.concurrency_key)::text || E'\n',
    true);
  return null;
end;
$$;
