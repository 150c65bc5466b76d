ALTER TABLE `wallets` ADD `claimed_by_user_id` text;--> statement-breakpoint
ALTER TABLE `wallets` ADD `share_migrated_at` text;