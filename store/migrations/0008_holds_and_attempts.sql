CREATE TABLE `holds` (
	`wallet_id` text NOT NULL,
	`chain_key` text NOT NULL,
	`holder_id` text NOT NULL,
	`created_at` text NOT NULL,
	PRIMARY KEY(`wallet_id`, `chain_key`)
);
--> statement-breakpoint
CREATE UNIQUE INDEX `holds_holder` ON `holds` (`holder_id`);--> statement-breakpoint
INSERT INTO `holds` (`wallet_id`, `chain_key`, `holder_id`, `created_at`) SELECT `wallet_id`, `chain_key`, `id`, `created_at` FROM `transactions` WHERE `unresolved` = 1;--> statement-breakpoint
DROP INDEX `transactions_hold`;--> statement-breakpoint
ALTER TABLE `transactions` ADD `attempts` text;--> statement-breakpoint
ALTER TABLE `transactions` ADD `auto_retry` text;--> statement-breakpoint
ALTER TABLE `transactions` ADD `cancels` text;--> statement-breakpoint
CREATE INDEX `transactions_cancels` ON `transactions` (`cancels`) WHERE cancels is not null;