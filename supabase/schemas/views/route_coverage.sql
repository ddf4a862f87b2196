-- sluice.route_coverage, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE VIEW sluice.route_coverage WITH (security_invoker='true') AS
 SELECT s.flow_slug,
    s.step_slug,
    s.step_index,
    s.queue_name,
    (count(w.worker_id))::integer AS live_workers,
    max(w.last_heartbeat_at) AS last_heartbeat_at,
    ( SELECT (count(*))::integer AS count
           FROM sluice.step_tasks t
          WHERE ((t.flow_slug = s.flow_slug) AND (t.step_slug = s.step_slug) AND (t.status = 'queued'::text))) AS queued_tasks,
    (count(w.worker_id) = 0) AS missing_worker
   FROM (sluice.steps s
     LEFT JOIN sluice.live_workers w ON (((w.queue_name = s.queue_name) AND (w.flow_slug = s.flow_slug) AND ((w.step_slug IS NULL) OR (w.step_slug = s.step_slug)))))
  WHERE (s.step_type <> ALL (ARRAY['sleep'::text, 'signal'::text, 'subflow'::text]))
  GROUP BY s.flow_slug, s.step_slug, s.step_index, s.queue_name;
