-- Monitoring views (docs/sql.md#monitoring-views), built on sluice.live_workers
-- (20261130000300_sluice_workers.sql). Queued tasks are counted through step_tasks_queued_idx
-- (20261130000200_sluice_runtime_tables.sql).

-- Every route of every flow with the live workers that serve it. A route nobody serves is
-- flagged: its tasks stay queued, durably, until a worker for it starts.
create view sluice.route_coverage as
select s.flow_slug, s.step_slug, s.step_index, s.queue_name,
  count(w.worker_id)::integer as live_workers,
  max(w.last_heartbeat_at) as last_heartbeat_at,
  (
    select count(*)::integer from sluice.step_tasks t
    where t.flow_slug = s.flow_slug and t.step_slug = s.step_slug and t.status = 'queued'
  ) as queued_tasks,
  count(w.worker_id) = 0 as missing_worker
from sluice.steps s
left join sluice.live_workers w
  on w.queue_name = s.queue_name
  and w.flow_slug = s.flow_slug
  and (w.step_slug is null or w.step_slug = s.step_slug)
group by s.flow_slug, s.step_slug, s.step_index, s.queue_name;

-- Every registered queue with its PGMQ metrics and live workers.
create view sluice.queue_health as
select q.queue_name, q.ownership, q.owner_flow_slug,
  m.queue_length, m.queue_visible_length, m.oldest_msg_age_sec, m.total_messages,
  (select count(*)::integer from sluice.live_workers w where w.queue_name = q.queue_name)
    as live_workers
from sluice.queues q
cross join lateral pgmq.metrics(q.queue_name) m;

create view sluice.worker_function_status as
select f.function_name, f.enabled, f.restart_paused_at is not null as restart_paused,
  f.restart_paused_at, f.pause_reason, f.last_invoked_at,
  (select count(*)::integer from sluice.live_workers w where w.function_name = f.function_name)
    as live_workers
from sluice.worker_functions f;
