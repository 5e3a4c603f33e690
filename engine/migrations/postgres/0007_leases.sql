-- Leases: running fires, job tasks and jobs carry the process that owns
-- them and until when (Unix ms) it has promised to renew that. A lease that
-- is past, or NULL (rows from before leases), belongs to no live process:
-- whoever notices closes or takes over that work. Fires may now also end as
-- 'error' (the database failed while storing them) or 'interrupted' (their
-- process stopped).
ALTER TABLE fires ADD COLUMN owner TEXT;
ALTER TABLE fires ADD COLUMN lease_until BIGINT;
ALTER TABLE job_tasks ADD COLUMN owner TEXT;
ALTER TABLE job_tasks ADD COLUMN lease_until BIGINT;
ALTER TABLE jobs ADD COLUMN owner TEXT;
ALTER TABLE jobs ADD COLUMN lease_until BIGINT;
CREATE INDEX fires_by_status ON fires(status, lease_until);
CREATE INDEX job_tasks_by_lease ON job_tasks(status, lease_until);
CREATE INDEX jobs_by_status ON jobs(status, lease_until);
