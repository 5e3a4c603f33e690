-- Calls that went out and got no answer (outcome 'unknown': timed out, or
-- the process making them stopped) are listed for review on the Spend
-- page; this keeps that list from reading every attempt ever made.
CREATE INDEX history_unanswered ON connector_history(fired_at) WHERE outcome = 'unknown';
