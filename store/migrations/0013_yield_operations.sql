CREATE TABLE `yield_chain_switches` (
	`chain_id` integer PRIMARY KEY NOT NULL,
	`disabled` integer NOT NULL,
	`reason` text,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `yield_operations` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`api_key_id` text,
	`wallet_id` text NOT NULL,
	`chain_id` integer NOT NULL,
	`action` text NOT NULL,
	`amount` text NOT NULL,
	`idempotency_key` text NOT NULL,
	`fingerprint` text NOT NULL,
	`status` text NOT NULL,
	`active` integer NOT NULL,
	`error` text,
	`steps` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`seq` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `yield_operations_seq` ON `yield_operations` (`seq`);--> statement-breakpoint
CREATE UNIQUE INDEX `yield_operations_key` ON `yield_operations` (`project_id`,`idempotency_key`);--> statement-breakpoint
CREATE UNIQUE INDEX `yield_operations_active` ON `yield_operations` (`wallet_id`,`chain_id`) WHERE active = 1;--> statement-breakpoint
CREATE INDEX `yield_operations_wallet_active` ON `yield_operations` (`wallet_id`,`seq`) WHERE active = 1;