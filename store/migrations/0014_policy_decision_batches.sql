CREATE TABLE `policy_decision_batches` (
	`id` integer PRIMARY KEY NOT NULL,
	`api_key_id` text NOT NULL,
	`first_seq` integer NOT NULL,
	`count` integer NOT NULL,
	`first_at` integer NOT NULL,
	`last_at` integer NOT NULL,
	`entries` blob NOT NULL
);
--> statement-breakpoint
CREATE INDEX `policy_decision_batches_key_time` ON `policy_decision_batches` (`api_key_id`,`first_at`);