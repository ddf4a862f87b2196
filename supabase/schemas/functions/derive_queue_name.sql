-- sluice.derive_queue_name, as the migrations create it (last defined in supabase/migrations/20261130001000_sluice_queue_names.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The route of a step in a plain or step-queued flow; routed flows supply their own.
CREATE OR REPLACE FUNCTION sluice.derive_queue_name(queue_mode text, flow_slug text, step_slug text, step_index integer) RETURNS text
    LANGUAGE sql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
  select case queue_mode
    when 'flow' then lower(flow_slug)
    when 'step' then sluice.step_queue_name(flow_slug, step_slug, step_index)
  end
$$;
