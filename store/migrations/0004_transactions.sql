CREATE TABLE `transactions` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`api_key_id` text,
	`wallet_id` text NOT NULL,
	`intent_kind` text NOT NULL,
	`type` text NOT NULL,
	`chain_key` text NOT NULL,
	`chain_id` text,
	`network` text,
	`status` text NOT NULL,
	`hash` text,
	`block_number` text,
	`block_hash` text,
	`failure_stage` text,
	`failure_code` text,
	`failure_message` text,
	`monitoring` text,
	`to_address` text,
	`value` text,
	`token_address` text,
	`nonce` integer,
	`recent_blockhash` text,
	`last_valid_block_height` integer,
	`signed_transaction` text,
	`unresolved` integer DEFAULT 1 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`resolved_at` text,
	`seq` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `transactions_seq` ON `transactions` (`seq`);--> statement-breakpoint
CREATE INDEX `transactions_wallet_seq` ON `transactions` (`wallet_id`,`seq`);--> statement-breakpoint
CREATE UNIQUE INDEX `transactions_hold` ON `transactions` (`wallet_id`,`chain_key`) WHERE unresolved = 1;--> statement-breakpoint
CREATE INDEX `transactions_watch` ON `transactions` (`chain_key`,`seq`) WHERE unresolved = 1 and hash is not null;--> statement-breakpoint
CREATE INDEX `transactions_wallet_chain_nonce` ON `transactions` (`wallet_id`,`chain_key`,`nonce`) WHERE nonce is not null;