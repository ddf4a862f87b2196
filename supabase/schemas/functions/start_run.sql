-- sluice.start_run, as the migrations create it (last defined in supabase/migrations/20261130001700_sluice_run_events.sql, 20261207001300_sluice_idempotent_start.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The browser's entry points (docs/events.md#browsers-and-edge-functions-on-supabase): a run
-- started and its state replayed by a role that holds no privilege on sluice's tables or pgmq.
-- Security definer for that reason, with a fixed search_path; no role may call them until it is
-- granted EXECUTE explicitly (neither anon nor authenticated ever is by a migration), and an
-- application that exposes them to its users wraps them with its own checks.
CREATE OR REPLACE FUNCTION sluice.start_run(flow_ref text, input jsonb) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  return sluice.start_flow(start_run.flow_ref, start_run.input);
end;
$$;

-- The browser's start with start options (docs/events.md#browsers-and-edge-functions-on-supabase):
-- security definer like start_run(flow_ref, input), and like it executable by no role until
-- granted explicitly.
CREATE OR REPLACE FUNCTION sluice.start_run(flow_ref text, input jsonb, options jsonb) RETURNS uuid
    LANGUAGE plpgsql SECURITY DEFINER
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  return sluice.start_flow(start_run.flow_ref, start_run.input, null, start_run.options);
end;
$$;
