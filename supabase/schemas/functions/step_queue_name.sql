-- sluice.step_queue_name, as the migrations create it (last defined in supabase/migrations/20261130001000_sluice_queue_names.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The private queue of one step of a step-queued flow: the readable name when it fits, else the
-- zero-based index fallback, else the whole flow is rejected.
CREATE OR REPLACE FUNCTION sluice.step_queue_name(flow_slug text, step_slug text, step_index integer) RETURNS text
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
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
