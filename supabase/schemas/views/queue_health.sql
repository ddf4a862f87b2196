-- sluice.queue_health, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE VIEW sluice.queue_health WITH (security_invoker='true') AS
 SELECT q.queue_name,
    q.ownership,
    q.owner_flow_slug,
    m.queue_length,
    m.queue_visible_length,
    m.oldest_msg_age_sec,
    m.total_messages,
    ( SELECT (count(*))::integer AS count
           FROM sluice.live_workers w
          WHERE (w.queue_name = q.queue_name)) AS live_workers
   FROM (sluice.queues q
     CROSS JOIN LATERAL pgmq.metrics(q.queue_name) m(queue_name, queue_length, newest_msg_age_sec, oldest_msg_age_sec, total_messages, scrape_time, queue_visible_length));
