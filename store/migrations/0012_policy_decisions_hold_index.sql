DROP INDEX `policy_decisions_spend_ref`;--> statement-breakpoint
CREATE INDEX `policy_decisions_spend_ref` ON `policy_decisions` (`api_key_id`,`spend_ref`) WHERE hold_id is not null;