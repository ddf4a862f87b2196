-- sluice.queues, as the migrations create it.
-- Generated: change it by a migration, then `deno task schema:dump --force` (docs/sql.md).

CREATE TABLE sluice.queues (
    queue_name text NOT NULL,
    ownership text NOT NULL,
    owner_flow_slug text,
    created_at timestamp with time zone DEFAULT now() NOT NULL,
    CONSTRAINT queues_check CHECK (((ownership = 'private'::text) = (owner_flow_slug IS NOT NULL))),
    CONSTRAINT queues_ownership_check CHECK ((ownership = ANY (ARRAY['private'::text, 'shared'::text]))),
    CONSTRAINT queues_queue_name_check CHECK ((queue_name = lower(queue_name)))
);

ALTER TABLE ONLY sluice.queues
    ADD CONSTRAINT queues_pkey PRIMARY KEY (queue_name);

ALTER TABLE ONLY sluice.queues
    ADD CONSTRAINT queues_owner_flow_slug_fkey FOREIGN KEY (owner_flow_slug) REFERENCES sluice.flows(flow_slug) ON DELETE CASCADE;

CREATE POLICY flow_access ON sluice.queues USING (((( SELECT sluice.access_scope(CURRENT_USER) AS access_scope) IS NULL) OR sluice.scope_covers(( SELECT sluice.access_scope(CURRENT_USER) AS access_scope), owner_flow_slug) OR ((ownership = 'shared'::text) AND (EXISTS ( SELECT 1
   FROM sluice.steps s
  WHERE (s.queue_name = queues.queue_name))))));

ALTER TABLE sluice.queues ENABLE ROW LEVEL SECURITY;
