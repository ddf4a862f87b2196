-- Baseline version only: the application's own PGMQ queues and their dead-letter queues. The
-- sluice version needs none of them (its step queues are created when a worker compiles the
-- flow).

select pgmq.create('classify_threads');
select pgmq.create('classify_threads_dlq');
select pgmq.create('deliver_slack_alerts');
select pgmq.create('deliver_slack_alerts_dlq');
