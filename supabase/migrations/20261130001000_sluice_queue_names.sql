-- Queue-name derivation (docs/architecture.md#queue-modes-and-names). TypeScript mirrors these
-- for synchronous feedback; these functions are the authority and compilation compares the
-- supplied routes with them.

create function sluice.max_queue_name_length()
returns integer
language sql
immutable
as $$ select 47 $$;

-- The one queue-name rule, for every path (generated and routed): ASCII lowercase letters, digits
-- and underscores, at most max_queue_name_length() bytes. PGMQ builds table names from the queue
-- name and PostgreSQL truncates identifiers at 63 bytes, so the limit is counted in bytes: names
-- counted in characters (two-byte letters) could truncate to one table. queue_name.ts mirrors it.
create function sluice.is_valid_queue_name(queue_name text)
returns boolean
language sql
immutable
as $$
  select queue_name is not null
    and queue_name ~ '^[a-z0-9_]+$'
    and octet_length(queue_name) <= sluice.max_queue_name_length()
$$;

-- The private queue of one step of a step-queued flow: the readable name when it fits, else the
-- zero-based index fallback, else the whole flow is rejected.
create function sluice.step_queue_name(flow_slug text, step_slug text, step_index integer)
returns text
language plpgsql
immutable
as $$
declare
  v_readable text := lower(flow_slug || '__' || step_slug);
  v_fallback text := lower(flow_slug || '__' || step_index);
begin
  if octet_length(v_readable) <= sluice.max_queue_name_length() then
    return v_readable;
  end if;
  if octet_length(v_fallback) <= sluice.max_queue_name_length() then
    return v_fallback;
  end if;
  raise exception 'Cannot derive a queue name for step "%" of flow "%": "%" (% characters) and "%" (% characters) both exceed % characters',
    step_slug, flow_slug, v_readable, length(v_readable), v_fallback, length(v_fallback),
    sluice.max_queue_name_length()
    using errcode = 'name_too_long', hint = 'Use a shorter flow slug';
end;
$$;

-- The route of a step in a plain or step-queued flow; routed flows supply their own.
create function sluice.derive_queue_name(
  queue_mode text,
  flow_slug text,
  step_slug text,
  step_index integer
)
returns text
language sql
immutable
as $$
  select case queue_mode
    when 'flow' then lower(flow_slug)
    when 'step' then sluice.step_queue_name(flow_slug, step_slug, step_index)
  end
$$;
