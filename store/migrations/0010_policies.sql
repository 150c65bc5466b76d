CREATE TABLE `key_permissions` (
	`api_key_id` text PRIMARY KEY NOT NULL,
	`enabled` integer NOT NULL,
	`approvals` integer NOT NULL,
	`production_review` text,
	`review_requested_at` integer,
	`review_decided_at` integer,
	`review_decided_by` text,
	`review_reason` text,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`api_key_id`) REFERENCES `api_keys`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `policies` (
	`id` text PRIMARY KEY NOT NULL,
	`api_key_id` text NOT NULL,
	`project_id` text NOT NULL,
	`name` text NOT NULL,
	`layer` text NOT NULL,
	`wallet_type` text NOT NULL,
	`selector` text NOT NULL,
	`status` text NOT NULL,
	`version` integer NOT NULL,
	`revision` integer NOT NULL,
	`source_policy_id` text,
	`merged_into` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`deleted_at` integer,
	FOREIGN KEY (`api_key_id`) REFERENCES `api_keys`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `policies_key` ON `policies` (`api_key_id`) WHERE deleted_at is null;--> statement-breakpoint
CREATE INDEX `policies_active` ON `policies` (`api_key_id`) WHERE status = 'active' and deleted_at is null;--> statement-breakpoint
CREATE UNIQUE INDEX `policies_active_selector` ON `policies` (`api_key_id`,`wallet_type`,`selector`) WHERE status = 'active' and deleted_at is null;--> statement-breakpoint
CREATE TABLE `policy_versions` (
	`policy_id` text NOT NULL,
	`version` integer NOT NULL,
	`document` text NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`policy_id`, `version`)
);
