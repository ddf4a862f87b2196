-- Retry policy: how long a failed attempt waits before its task runs again, and how long a
-- started attempt may go unreported before stalled recovery gives it up (and, like a failure,
-- uses it up). Named functions, so that every caller reads one definition.

-- The retry delay a handler may select, and the cap on computed backoff: one day.
create function sluice.max_retry_delay_seconds()
returns integer
language sql
immutable
as $$ select 86400 $$;

-- Exponential backoff: base * 2^(attempt - 1), capped. The exponent is clamped first so high
-- attempt counts cannot overflow.
create function sluice.backoff_delay_seconds(base_delay integer, attempt integer)
returns integer
language sql
immutable
as $$
  select least(
    sluice.max_retry_delay_seconds()::double precision,
    base_delay * power(2::double precision, least(greatest(attempt - 1, 0), 30))
  )::integer
$$;

-- The margin past a task's effective timeout after which a started attempt counts as stalled: a
-- live worker would have aborted its handler at the timeout and reported it by then. The claim
-- hides a duplicate's message until then; stalled recovery requeues (or exhausts) after it.
create function sluice.stall_margin_seconds()
returns integer
language sql
immutable
as $$ select 30 $$;
