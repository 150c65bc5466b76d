DROP INDEX `transactions_watch`;--> statement-breakpoint
ALTER TABLE `transactions` ADD `watched` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
UPDATE `transactions` SET `watched` = 1 WHERE `unresolved` = 1;--> statement-breakpoint
CREATE INDEX `transactions_watch` ON `transactions` (`chain_key`,`seq`) WHERE watched = 1 and hash is not null;
