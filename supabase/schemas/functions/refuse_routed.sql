-- sluice.refuse_routed, as the migrations create it (last defined in supabase/migrations/20261202000500_sluice_refuse_routed.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Raises on a routed definition, naming the flow; the definition is already validated.
CREATE OR REPLACE FUNCTION sluice.refuse_routed(definition jsonb) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if definition ->> 'queue_mode' = 'routed' then
    raise exception 'Cannot compile flow "%": queue_mode "routed" (explicit shared queues) is not supported, shared queues are not built',
      definition ->> 'flow_slug'
      using errcode = 'feature_not_supported',
        hint = 'Compile it with queue_mode "flow" (a plain Flow) or "step" (withStepQueues()); to '
          || 'run several steps in one worker function, co-host them (withStepQueues(flow, '
          || '{ functions }), docs/integration/back_office.md)';
  end if;
end;
$$;
