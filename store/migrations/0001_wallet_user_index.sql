DROP INDEX `wallets_status`;--> statement-breakpoint
CREATE INDEX `wallets_project_user` ON `wallets` (`project_id`,`user_identifier`,`seq`);