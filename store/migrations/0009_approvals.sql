CREATE TABLE `approval_cases` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`api_key_id` text NOT NULL,
	`wallet_id` text NOT NULL,
	`scope_id` text NOT NULL,
	`policy_id` text NOT NULL,
	`policy_version` integer NOT NULL,
	`rule_id` text NOT NULL,
	`reference` text NOT NULL,
	`body_hash` text NOT NULL,
	`status` text NOT NULL,
	`stages` text NOT NULL,
	`initiator_user_id` text,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`ended_at` integer,
	`used_at` integer,
	`seq` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `approval_cases_reference` ON `approval_cases` (`api_key_id`,`reference`);--> statement-breakpoint
CREATE UNIQUE INDEX `approval_cases_seq` ON `approval_cases` (`seq`);--> statement-breakpoint
CREATE INDEX `approval_cases_key_seq` ON `approval_cases` (`api_key_id`,`seq`);--> statement-breakpoint
CREATE INDEX `approval_cases_project_seq` ON `approval_cases` (`project_id`,`seq`);--> statement-breakpoint
CREATE INDEX `approval_cases_policy` ON `approval_cases` (`policy_id`) WHERE status = 'pending';--> statement-breakpoint
CREATE INDEX `approval_cases_scope` ON `approval_cases` (`scope_id`) WHERE status = 'pending';--> statement-breakpoint
CREATE TABLE `approval_decisions` (
	`case_id` text NOT NULL,
	`user_id` text NOT NULL,
	`stage` integer NOT NULL,
	`decision` text NOT NULL,
	`decided_at` integer NOT NULL,
	PRIMARY KEY(`case_id`, `user_id`),
	FOREIGN KEY (`case_id`) REFERENCES `approval_cases`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `authorization_scopes` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`name` text NOT NULL,
	`created_at` text NOT NULL,
	`seq` integer NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `authorization_scopes_seq` ON `authorization_scopes` (`seq`);--> statement-breakpoint
CREATE INDEX `authorization_scopes_project_seq` ON `authorization_scopes` (`project_id`,`seq`);--> statement-breakpoint
CREATE TABLE `project_users` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`name` text NOT NULL,
	`created_at` text NOT NULL,
	`seq` integer NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `project_users_seq` ON `project_users` (`seq`);--> statement-breakpoint
CREATE INDEX `project_users_project_seq` ON `project_users` (`project_id`,`seq`);--> statement-breakpoint
CREATE TABLE `reviews` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`api_key_id` text NOT NULL,
	`wallet_id` text NOT NULL,
	`policy_id` text NOT NULL,
	`policy_version` integer NOT NULL,
	`rule_id` text NOT NULL,
	`reference` text NOT NULL,
	`body_hash` text NOT NULL,
	`status` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`decided_at` integer,
	`consumed_at` integer,
	`seq` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `reviews_seq` ON `reviews` (`seq`);--> statement-breakpoint
CREATE INDEX `reviews_reference` ON `reviews` (`api_key_id`,`reference`,`seq`);--> statement-breakpoint
CREATE TABLE `scope_assignments` (
	`scope_id` text NOT NULL,
	`user_id` text NOT NULL,
	`roles` text NOT NULL,
	`revision` integer NOT NULL,
	`updated_at` text NOT NULL,
	PRIMARY KEY(`scope_id`, `user_id`),
	FOREIGN KEY (`scope_id`) REFERENCES `authorization_scopes`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`user_id`) REFERENCES `project_users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `wallet_scope_bindings` (
	`wallet_id` text PRIMARY KEY NOT NULL,
	`scope_id` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`wallet_id`) REFERENCES `wallets`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`scope_id`) REFERENCES `authorization_scopes`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `wallet_scope_bindings_scope` ON `wallet_scope_bindings` (`scope_id`);