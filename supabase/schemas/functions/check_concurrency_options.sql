-- sluice.check_concurrency_options, as the migrations create it (last defined in supabase/migrations/20261207234003_sluice_rate_limits.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- Validates the concurrency limits of a definition's steps before anything is written, naming the
-- step and the value: options.concurrency_limit is a whole number >= 1 (or null), only on a step
-- that runs a handler; options.concurrency_key is null or a path into the run input, a non-empty
-- array of non-empty strings, and only with a limit; options.rate_limit and options.rate_period
-- (seconds) are whole numbers >= 1, both or neither, on a step that runs a handler.
CREATE OR REPLACE FUNCTION sluice.check_concurrency_options(definition jsonb) RETURNS void
    LANGUAGE plpgsql IMMUTABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $$
declare
  v_step jsonb;
  v_slug text;
  v_limit jsonb;
  v_key jsonb;
  v_rate jsonb;
  v_period jsonb;
begin
  for v_step in select e from jsonb_array_elements(definition -> 'steps') as e loop
    v_slug := v_step ->> 'step_slug';
    v_limit := coalesce(v_step #> '{options,concurrency_limit}', 'null');
    v_key := coalesce(v_step #> '{options,concurrency_key}', 'null');
    v_rate := coalesce(v_step #> '{options,rate_limit}', 'null');
    v_period := coalesce(v_step #> '{options,rate_period}', 'null');
    perform sluice.check_whole_number(v_rate, 1,
      format('options.rate_limit of step "%s"', v_slug));
    perform sluice.check_whole_number(v_period, 1,
      format('options.rate_period of step "%s"', v_slug));
    if (v_rate = 'null') <> (v_period = 'null') then
      raise exception 'Invalid flow definition: options.rate_limit and options.rate_period of step "%" go together, got % and %',
        v_slug, v_rate, v_period
        using errcode = 'invalid_parameter_value';
    end if;
    perform sluice.check_whole_number(v_limit, 1,
      format('options.concurrency_limit of step "%s"', v_slug));
    if (v_limit <> 'null' or v_rate <> 'null') and v_step ->> 'step_type' not in ('single', 'map')
    then
      raise exception 'Invalid flow definition: the limits of step "%" need a step that runs a handler, not a % step',
        v_slug, v_step ->> 'step_type'
        using errcode = 'invalid_parameter_value';
    end if;
    if v_key <> 'null' and (jsonb_typeof(v_key) <> 'array' or jsonb_array_length(v_key) = 0
        or exists (select 1 from jsonb_array_elements(v_key) p
          where jsonb_typeof(p) <> 'string' or p #>> '{}' = ''))
    then
      raise exception 'Invalid flow definition: options.concurrency_key of step "%" must be a non-empty array of non-empty strings (a path into the run input), got %',
        v_slug, left(v_key::text, 80)
        using errcode = 'invalid_parameter_value';
    end if;
    if v_key <> 'null' and v_limit = 'null' and v_rate = 'null' then
      raise exception 'Invalid flow definition: options.concurrency_key of step "%" needs options.concurrency_limit or options.rate_limit',
        v_slug
        using errcode = 'invalid_parameter_value';
    end if;
  end loop;
end;
$$;
