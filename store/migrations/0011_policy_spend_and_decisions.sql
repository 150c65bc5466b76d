CREATE TABLE `policy_decisions` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`api_key_id` text NOT NULL,
	`wallet_id` text NOT NULL,
	`reference` text NOT NULL,
	`spend_ref` text NOT NULL,
	`action` text NOT NULL,
	`effect` text NOT NULL,
	`reason` text,
	`policy_id` text,
	`rule_id` text,
	`hold_id` text,
	`request` text NOT NULL,
	`trace` text NOT NULL,
	`decided_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `policy_decisions_key_time` ON `policy_decisions` (`api_key_id`,`decided_at`);--> statement-breakpoint
CREATE INDEX `policy_decisions_spend_ref` ON `policy_decisions` (`api_key_id`,`spend_ref`);--> statement-breakpoint
CREATE TABLE `policy_spend` (
	`api_key_id` text NOT NULL,
	`spend_ref` text NOT NULL,
	`network` text NOT NULL,
	`asset` text NOT NULL,
	`wallet_id` text NOT NULL,
	`amount` text NOT NULL,
	`counted_at` integer NOT NULL,
	`released_at` integer,
	PRIMARY KEY(`api_key_id`, `spend_ref`, `network`, `asset`)
);
--> statement-breakpoint
CREATE INDEX `policy_spend_wallet` ON `policy_spend` (`api_key_id`,`wallet_id`,`network`,`asset`,`counted_at`);--> statement-breakpoint
CREATE TABLE `policy_spend_windows` (
	`api_key_id` text NOT NULL,
	`wallet_id` text NOT NULL,
	`network` text NOT NULL,
	`asset` text NOT NULL,
	`window_ms` integer NOT NULL,
	`window_start` integer NOT NULL,
	`window_end` integer NOT NULL,
	`total` text NOT NULL,
	PRIMARY KEY(`api_key_id`, `wallet_id`, `network`, `asset`, `window_ms`, `window_start`)
);
--> statement-breakpoint
CREATE INDEX `policy_spend_windows_end` ON `policy_spend_windows` (`api_key_id`,`wallet_id`,`network`,`asset`,`window_end`);