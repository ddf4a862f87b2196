-- sluice.caller_traceparent, as the migrations create it (last defined in supabase/migrations/20261207001500_sluice_trace_context.sql).
-- Edit it here; `deno task sql:migration <name>` writes the migration (docs/sql.md).

-- The W3C traceparent of the caller, or null: the setting sluice.traceparent (what startFlow()
-- and a worker firing schedules set for their statement, what an SQL caller sets with
-- `set local`), else the traceparent header of the HTTP request PostgREST serves (a supabase-js
-- rpc call, e.g. startRun from a browser). An empty setting is an unset one (a session keeps the
-- setting, empty, once a transaction of it set it locally). A malformed setting is refused, as
-- input is; a malformed header is ignored, as the W3C Trace Context specification asks of a
-- receiver.
CREATE OR REPLACE FUNCTION sluice.caller_traceparent() RETURNS text
    LANGUAGE plpgsql STABLE
    SET search_path TO 'pg_catalog', 'pg_temp'
    AS $_$
declare
  v_pattern constant text := '^00-[0-9a-f]{32}-[0-9a-f]{16}-[0-9a-f]{2}$';
  v_setting text := current_setting('sluice.traceparent', true);
  v_headers text := current_setting('request.headers', true);
  v_header text;
begin
  if v_setting <> '' then
    if v_setting !~ v_pattern or substr(v_setting, 4, 32) = repeat('0', 32)
      or substr(v_setting, 37, 16) = repeat('0', 16) then
      raise exception 'Cannot start a run: sluice.traceparent % is not a W3C traceparent', quote_literal(v_setting)
        using errcode = 'invalid_parameter_value',
          hint = 'Set it to 00-<32 hex trace id>-<16 hex span id>-<2 hex flags> (lower case), or to '''' for none';
    end if;
    return v_setting;
  end if;
  -- Outside PostgREST there are no headers, and no subtransaction for the guarded cast below.
  if v_headers is null or v_headers = '' then
    return null;
  end if;
  begin
    v_header := v_headers::jsonb ->> 'traceparent';
  exception when others then
    return null;
  end;
  if v_header ~ v_pattern and substr(v_header, 4, 32) <> repeat('0', 32)
    and substr(v_header, 37, 16) <> repeat('0', 16) then
    return v_header;
  end if;
  return null;
end;
$_$;
