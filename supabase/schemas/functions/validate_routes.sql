-- sluice.validate_routes, as the migrations create it (last defined in supabase/migrations/20261130001100_sluice_ensure_flow_compiled.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Checks routes and queue ownership of a definition that is about to be created; raises on the
-- first problem. Private queues (plain and step-queued flows) must not exist at all yet: sluice
-- never adopts a queue silently. Shared queues (routed flows) are reused when sluice registered
-- them as shared, created when absent, and rejected otherwise.
CREATE OR REPLACE FUNCTION sluice.validate_routes(definition jsonb, shape jsonb) RETURNS void
    LANGUAGE plpgsql
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_flow text := definition ->> 'flow_slug';
  v_mode text := definition ->> 'queue_mode';
  v_i integer;
  v_slug text;
  v_supplied text;
  v_queue text;
  v_other text;
  v_registry sluice.queues;
  v_meta text;
begin
  for v_i in 0 .. jsonb_array_length(shape -> 'steps') - 1 loop
    v_slug := shape -> 'steps' -> v_i ->> 'step_slug';
    v_queue := shape -> 'steps' -> v_i ->> 'queue_name';
    v_supplied := definition -> 'routes' -> v_i ->> 'queue_name';
    if v_supplied is distinct from v_queue then
      raise exception 'Invalid flow definition: the route of step "%" of flow "%" is "%", but SQL derives "%"',
        v_slug, v_flow, v_supplied, v_queue
        using errcode = 'invalid_parameter_value';
    end if;
    -- One rule for generated and routed names (sluice.is_valid_queue_name). Checked here rather
    -- than left to pgmq.validate_queue_name: PGMQ 1.5.1 counts characters and names 48 as the
    -- maximum although 47 bytes is the limit.
    if not sluice.is_valid_queue_name(v_queue) then
      raise exception 'Invalid flow definition: queue "%" of step "%" of flow "%" (% bytes) must be ASCII lowercase letters, digits and underscores, at most % bytes',
        v_queue, v_slug, v_flow, octet_length(v_queue), sluice.max_queue_name_length()
        using errcode = 'invalid_parameter_value';
    end if;
    begin
      perform pgmq.validate_queue_name(v_queue);
      perform pgmq.format_table_name(v_queue, 'q');
    exception when others then
      raise exception 'Invalid flow definition: queue "%" of step "%" of flow "%": %',
        v_queue, v_slug, v_flow, sqlerrm
        using errcode = 'invalid_parameter_value';
    end;

    select s.value ->> 'step_slug' into v_other
    from jsonb_array_elements(shape -> 'steps') with ordinality as s(value, ord)
    where s.ord - 1 < v_i and s.value ->> 'queue_name' = v_queue
    limit 1;
    if v_other is not null and v_mode = 'step' then
      raise exception 'Invalid flow definition: steps "%" and "%" of flow "%" both resolve to queue "%"',
        v_other, v_slug, v_flow, v_queue
        using errcode = 'invalid_parameter_value';
    end if;
    continue when v_other is not null;

    select * into v_registry from sluice.queues q where q.queue_name = v_queue;
    select m.queue_name into v_meta from pgmq.meta m where lower(m.queue_name) = v_queue limit 1;
    if v_mode <> 'routed' then
      if v_registry.queue_name is not null then
        raise exception 'Cannot compile flow "%": queue "%" of step "%" is already registered as % to %',
          v_flow, v_queue, v_slug, v_registry.ownership,
          coalesce(format('flow "%s"', v_registry.owner_flow_slug), 'no flow')
          using errcode = 'duplicate_object';
      end if;
      if v_meta is not null then
        raise exception 'Cannot compile flow "%": queue "%" of step "%" already exists in PGMQ (as "%") but no sluice flow owns it; sluice never adopts a queue silently',
          v_flow, v_queue, v_slug, v_meta
          using errcode = 'duplicate_object',
            hint = 'Drop that queue or deploy the flow under another concrete slug';
      end if;
    elsif v_registry.ownership = 'private' then
      raise exception 'Cannot compile flow "%": queue "%" of step "%" is private to flow "%"',
        v_flow, v_queue, v_slug, v_registry.owner_flow_slug
        using errcode = 'duplicate_object';
    elsif v_registry.queue_name is null and v_meta is not null then
      raise exception 'Cannot compile flow "%": shared queue "%" of step "%" already exists in PGMQ (as "%") but sluice did not create it; sluice never adopts a queue silently',
        v_flow, v_queue, v_slug, v_meta
        using errcode = 'duplicate_object';
    end if;
  end loop;

  if exists (
    select 1 from sluice.aliases a where a.alias = v_flow and a.flow_slug <> v_flow
  ) then
    raise exception 'Cannot compile flow "%": an alias of that name already points at flow "%"',
      v_flow, (select a.flow_slug from sluice.aliases a where a.alias = v_flow)
      using errcode = 'duplicate_object';
  end if;
end;
$$;
