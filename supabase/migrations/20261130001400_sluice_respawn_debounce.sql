-- sluice.claim_respawn: the debounce of Edge self-respawn (docs/edge.md#how-respawn-works). An Edge
-- isolate that is about to end asks for a successor by calling its own function URL. When several
-- isolates of one worker function end together (the platform retires them at about the same time,
-- or extra invocations started more than one), each would ask, and every generation would multiply
-- the workers. Before asking, an isolate claims the respawn here; exactly one of them wins.
--
-- The claim is a compare-and-set on worker_functions.last_invoked_at against the value the
-- isolate read when it started its worker (seen_invoked_at, null when never set). The winner moves
-- it to now(); every other isolate that read the same value now finds a different one. A fixed
-- minimum interval would not do: a successor that dies soon after starting (CPU or memory limit)
-- would find its own predecessor's recent claim and end the chain, while the compare-and-set
-- lets it continue, because nobody respawned since it started.
--
-- The same statement requires the function to be enabled and not restart-paused, so no successor
-- is requested for a function an operator disabled or a fatal claim paused, even a moment ago.
-- A missing row (the worker never tracked its function) claims nothing.
--
-- Locks: the worker_functions row of the function (the update). Concurrent claimants queue on
-- that row lock; under read committed each waiter re-checks the where clause against the row the
-- winner committed, sees the new last_invoked_at and updates nothing.

create function sluice.claim_respawn(function_name text, seen_invoked_at timestamptz)
returns boolean
language sql
as $$
  with claimed as (
    update sluice.worker_functions wf
    set last_invoked_at = now(), updated_at = now()
    where wf.function_name = claim_respawn.function_name
      and wf.enabled
      and wf.restart_paused_at is null
      and wf.last_invoked_at is not distinct from claim_respawn.seen_invoked_at
    returning 1
  )
  select exists (select 1 from claimed)
$$;
