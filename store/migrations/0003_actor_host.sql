CREATE TABLE `actor_effects` (
	`key` text PRIMARY KEY NOT NULL,
	`actor_id` text NOT NULL,
	`invoke_id` text NOT NULL,
	`src` text NOT NULL,
	`input` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `actor_effects_actor` ON `actor_effects` (`actor_id`);--> statement-breakpoint
CREATE TABLE `actor_inbox` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`actor_id` text NOT NULL,
	`event_id` text NOT NULL,
	`event` text,
	`status` text NOT NULL,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `actor_inbox_event` ON `actor_inbox` (`actor_id`,`event_id`);--> statement-breakpoint
CREATE INDEX `actor_inbox_pending` ON `actor_inbox` (`actor_id`,`seq`) WHERE status = 'pending';--> statement-breakpoint
DROP INDEX `actor_snapshots_wake`;--> statement-breakpoint
ALTER TABLE `actor_snapshots` ADD `state` text;--> statement-breakpoint
ALTER TABLE `actor_snapshots` ADD `step` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `actor_snapshots` ADD `faulted_at` text;--> statement-breakpoint
ALTER TABLE `actor_snapshots` ADD `fault_reason` text;--> statement-breakpoint
ALTER TABLE `actor_snapshots` ADD `abandoned_at` text;--> statement-breakpoint
CREATE INDEX `actor_snapshots_due` ON `actor_snapshots` (`wake_at`) WHERE wake_at is not null and done = 0 and faulted_at is null;--> statement-breakpoint
CREATE INDEX `actor_snapshots_faulted` ON `actor_snapshots` (`faulted_at`) WHERE faulted_at is not null;--> statement-breakpoint
CREATE INDEX `actor_snapshots_machine_state` ON `actor_snapshots` (`machine`,`state`,`actor_id`) WHERE done = 0;