CREATE TABLE `idempotency_keys` (
	`project_id` text NOT NULL,
	`key` text NOT NULL,
	`operation` text NOT NULL,
	`wallet_id` text,
	`fingerprint` text NOT NULL,
	`transaction_id` text,
	`status_code` integer,
	`body` text,
	`headers` text,
	`created_at` integer NOT NULL,
	`expires_at` integer,
	PRIMARY KEY(`project_id`, `key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_keys_expiry` ON `idempotency_keys` (`expires_at`) WHERE expires_at is not null;