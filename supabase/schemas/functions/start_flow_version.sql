-- sluice.start_flow_version, as the migrations create it (last defined in supabase/migrations/20261207235622_sluice_flow_access_checks.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Starts the concrete flow `flow_slug`, never through an alias: what a typed client does with a
-- concrete flow object, whose input type is that version's, and what a drain or a test uses to
-- reach an old version after its name was re-pointed.
CREATE OR REPLACE FUNCTION sluice.start_flow_version(flow_slug text, input jsonb, run_id uuid DEFAULT NULL::uuid) RETURNS uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if not exists (
    select 1 from sluice.flows f where f.flow_slug = start_flow_version.flow_slug
  ) then
    -- Invisible to a role granted other flows: say so rather than that it does not exist.
    perform sluice.check_flow_access(start_flow_version.flow_slug,
      format('start flow %s', start_flow_version.flow_slug));
    raise exception 'Cannot start flow "%": no such flow', start_flow_version.flow_slug
      using errcode = 'no_data_found',
        hint = 'A flow exists once a worker for it has started and compiled it';
  end if;
  return sluice.create_run(start_flow_version.flow_slug, start_flow_version.flow_slug,
    start_flow_version.input, start_flow_version.run_id);
end;
$$;

-- start_flow_version with start options: the concrete flow `flow_slug`, never through an alias.
CREATE OR REPLACE FUNCTION sluice.start_flow_version(flow_slug text, input jsonb, run_id uuid, options jsonb) RETURNS uuid
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
begin
  if not exists (
    select 1 from sluice.flows f where f.flow_slug = start_flow_version.flow_slug
  ) then
    -- Invisible to a role granted other flows: say so rather than that it does not exist.
    perform sluice.check_flow_access(start_flow_version.flow_slug,
      format('start flow %s', start_flow_version.flow_slug));
    raise exception 'Cannot start flow "%": no such flow', start_flow_version.flow_slug
      using errcode = 'no_data_found',
        hint = 'A flow exists once a worker for it has started and compiled it';
  end if;
  return sluice.start_with_options(start_flow_version.flow_slug, start_flow_version.flow_slug,
    start_flow_version.input, start_flow_version.run_id, start_flow_version.options);
end;
$$;
