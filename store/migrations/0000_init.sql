CREATE TABLE `actor_snapshots` (
	`actor_id` text PRIMARY KEY NOT NULL,
	`machine` text NOT NULL,
	`machine_version` integer NOT NULL,
	`snapshot` text NOT NULL,
	`done` integer DEFAULT 0 NOT NULL,
	`wake_at` integer,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `actor_snapshots_live` ON `actor_snapshots` (`done`) WHERE done = 0;--> statement-breakpoint
CREATE INDEX `actor_snapshots_wake` ON `actor_snapshots` (`wake_at`) WHERE wake_at is not null;--> statement-breakpoint
CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`environment` text NOT NULL,
	`secret_hash` text NOT NULL,
	`created_at` text NOT NULL,
	`rotated_at` text,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `api_keys_secret_hash` ON `api_keys` (`secret_hash`);--> statement-breakpoint
CREATE INDEX `api_keys_project` ON `api_keys` (`project_id`);--> statement-breakpoint
CREATE TABLE `outbox` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`id` text NOT NULL,
	`project_id` text NOT NULL,
	`api_key_id` text,
	`type` text NOT NULL,
	`data` text NOT NULL,
	`created_at` text NOT NULL,
	`delivered_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `outbox_id_unique` ON `outbox` (`id`);--> statement-breakpoint
CREATE INDEX `outbox_pending` ON `outbox` (`seq`) WHERE delivered_at is null;--> statement-breakpoint
CREATE TABLE `projects` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`plan` text NOT NULL,
	`rate_limit_per_minute` integer,
	`ip_allowlist` text DEFAULT '[]' NOT NULL,
	`created_at` text NOT NULL,
	`deleted_at` text
);
--> statement-breakpoint
CREATE TABLE `wallets` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`type` text NOT NULL,
	`scheme` text NOT NULL,
	`status` text NOT NULL,
	`address` text,
	`public_key` text,
	`user_identifier` text NOT NULL,
	`user_identifier_type` text NOT NULL,
	`cosmos_prefix` text,
	`custody` text DEFAULT 'managed' NOT NULL,
	`claimed_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	`seq` integer NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `wallets_identity` ON `wallets` (`project_id`,`user_identifier_type`,`user_identifier`,`type`,`scheme`);--> statement-breakpoint
CREATE UNIQUE INDEX `wallets_seq` ON `wallets` (`seq`);--> statement-breakpoint
CREATE INDEX `wallets_project_seq` ON `wallets` (`project_id`,`seq`);--> statement-breakpoint
CREATE INDEX `wallets_project_address` ON `wallets` (`project_id`,`address`);--> statement-breakpoint
CREATE INDEX `wallets_status` ON `wallets` (`status`);