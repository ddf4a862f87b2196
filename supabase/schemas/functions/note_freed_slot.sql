-- sluice.note_freed_slot, as the migrations create it (last defined in supabase/migrations/20261207234003_sluice_rate_limits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Trigger of step_tasks (after insert of a held task, and after a status change of a limited
-- task: it was held again, claimed, or gave up its slot): notes the task's key in a
-- transaction-local setting, for the commit to release (sluice.release_noted_slots). Noting
-- instead of releasing at once lets the commit take the key locks of a whole transaction in one
-- order: two transactions that each touch several keys never wait on each other in a cycle. The
-- first claim of a rate-limited task (of its retry round) is recorded in sluice.rate_limit_starts,
-- the window its key's next release counts.
CREATE OR REPLACE FUNCTION sluice.note_freed_slot() RETURNS trigger
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  -- A claim matters only to a rate-limited step: its window counts the claim, and its key sends
  -- the next task once this one is claimed. A concurrency-limited step's slot was taken when
  -- the task was sent.
  if tg_op = 'UPDATE' and old.status = 'queued' and new.status = 'started' then
    if old.attempts_count <> old.attempts_base then
      return null;
    end if;
    insert into sluice.rate_limit_starts (flow_slug, step_slug, rate_key, started_at)
    select new.flow_slug, new.step_slug, new.concurrency_key, new.started_at
    from sluice.steps s
    where s.flow_slug = new.flow_slug and s.step_slug = new.step_slug
      and s.opt_rate_limit is not null;
    if not found then
      return null;
    end if;
  end if;
  perform set_config('sluice.noted_slots',
    coalesce(current_setting('sluice.noted_slots', true), '')
      || jsonb_build_array(new.flow_slug, new.step_slug, new.concurrency_key)::text || E'\n',
    true);
  return null;
end;
$$;
