-- Worker functions (deployable units, e.g. one Edge Function each) and the workers they run.

create table sluice.worker_functions (
  function_name text primary key check (function_name <> ''),
  enabled boolean not null default true,
  -- persistent: survives respawns and cold starts, cleared only by an operator
  restart_paused_at timestamptz,
  pause_reason text,
  last_invoked_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((restart_paused_at is null) = (pause_reason is null))
);

create table sluice.workers (
  worker_id uuid primary key,
  function_name text not null references sluice.worker_functions (function_name),
  queue_name text not null,
  flow_slug text,
  step_slug text,
  -- the flow's compile_generation the worker compiled against (null: no such flow then)
  flow_generation bigint,
  started_at timestamptz not null default now(),
  last_heartbeat_at timestamptz not null default now(),
  deprecated_at timestamptz,
  stopped_at timestamptz
);

create index workers_queue_live_idx on sluice.workers (queue_name) where stopped_at is null;

-- A worker counts as alive while it has not stopped and its heartbeat is fresh.
create function sluice.worker_heartbeat_ttl()
returns interval
language sql
immutable
as $$ select interval '30 seconds' $$;

-- The one definition of a live worker: it has not stopped and its heartbeat is fresher than
-- sluice.worker_heartbeat_ttl(). Monitoring, drains and development recompilation all count
-- workers through this view.
create view sluice.live_workers as
select w.*
from sluice.workers w
where w.stopped_at is null
  and w.last_heartbeat_at > now() - sluice.worker_heartbeat_ttl();

create function sluice.track_worker_function(function_name text)
returns sluice.worker_functions
language sql
as $$
  insert into sluice.worker_functions as wf (function_name)
  values (track_worker_function.function_name)
  on conflict (function_name) do update set updated_at = now()
  returning wf.*
$$;

-- flow_generation: the compile_generation ensure_flow_compiled answered the worker; when null, the
-- flow's current one. A worker registered for an older compile is fenced (sluice.worker_fenced).
create function sluice.register_worker(
  worker_id uuid,
  function_name text,
  queue_name text,
  flow_slug text,
  step_slug text default null,
  flow_generation bigint default null
)
returns void
language plpgsql
as $$
begin
  if not exists (
    select 1 from sluice.worker_functions wf
    where wf.function_name = register_worker.function_name
  ) then
    raise exception 'Cannot register worker %: worker function "%" is not tracked; call sluice.track_worker_function first',
      register_worker.worker_id, register_worker.function_name;
  end if;
  insert into sluice.workers (
    worker_id, function_name, queue_name, flow_slug, step_slug, flow_generation
  )
  values (
    register_worker.worker_id, register_worker.function_name, lower(register_worker.queue_name),
    register_worker.flow_slug, register_worker.step_slug,
    coalesce(register_worker.flow_generation, (
      select f.compile_generation from sluice.flows f
      where f.flow_slug = register_worker.flow_slug
    ))
  );
end;
$$;

-- A worker is fenced once its flow was compiled again after the compile it registered for (a
-- development recompile, or a reset and a new compile): its claims and its reports are refused,
-- live or not, so a worker paused past the heartbeat TTL cannot run its old handlers on the new
-- shape. A worker that registered without a flow is never fenced.
create function sluice.worker_fenced(worker_id uuid)
returns boolean
language sql
stable
as $$
  select exists (
    select 1 from sluice.workers w
    left join sluice.flows f on f.flow_slug = w.flow_slug
    where w.worker_id = worker_fenced.worker_id
      and w.flow_generation is not null
      and f.compile_generation is distinct from w.flow_generation
  )
$$;

-- Returns whether the worker has been deprecated (it should then stop polling and drain).
create function sluice.heartbeat_worker(worker_id uuid)
returns jsonb
language plpgsql
as $$
declare
  v_deprecated timestamptz;
begin
  update sluice.workers w set last_heartbeat_at = now()
  where w.worker_id = heartbeat_worker.worker_id
  returning w.deprecated_at into v_deprecated;
  if not found then
    raise exception 'Cannot heartbeat worker %: no such worker', heartbeat_worker.worker_id;
  end if;
  return jsonb_build_object('deprecated', v_deprecated is not null);
end;
$$;

create function sluice.stop_worker(worker_id uuid)
returns void
language sql
as $$
  update sluice.workers w set stopped_at = coalesce(w.stopped_at, now())
  where w.worker_id = stop_worker.worker_id
$$;

create function sluice.clear_restart_pause(function_name text)
returns boolean
language sql
as $$
  with cleared as (
    update sluice.worker_functions wf
    set restart_paused_at = null, pause_reason = null, updated_at = now()
    where wf.function_name = clear_restart_pause.function_name
      and wf.restart_paused_at is not null
    returning 1
  )
  select exists (select 1 from cleared)
$$;
