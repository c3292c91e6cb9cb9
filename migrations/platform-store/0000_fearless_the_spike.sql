CREATE TABLE `blog_posts` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`title` text NOT NULL,
	`slug` text NOT NULL,
	`body` text NOT NULL,
	`author` text NOT NULL,
	`tags` text NOT NULL,
	`published` integer NOT NULL,
	`published_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `blog_posts_store_slug` ON `blog_posts` (`store_id`,`slug`);--> statement-breakpoint
CREATE INDEX `blog_posts_store_created` ON `blog_posts` (`store_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `blog_posts_store_updated` ON `blog_posts` (`store_id`,`updated_at`,`id`);--> statement-breakpoint
CREATE TABLE `carriers` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`name` text NOT NULL,
	`code` text NOT NULL,
	`services` text NOT NULL,
	`active` integer NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `carriers_store_created` ON `carriers` (`store_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `collections` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`name` text NOT NULL,
	`slug` text NOT NULL,
	`description` text NOT NULL,
	`product_ids` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `collections_store_slug` ON `collections` (`store_id`,`slug`);--> statement-breakpoint
CREATE INDEX `collections_store_created` ON `collections` (`store_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `collections_store_updated` ON `collections` (`store_id`,`updated_at`,`id`);--> statement-breakpoint
CREATE TABLE `customers` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`email` text NOT NULL,
	`first_name` text NOT NULL,
	`last_name` text NOT NULL,
	`phone` text NOT NULL,
	`accepts_marketing` integer NOT NULL,
	`note` text NOT NULL,
	`tags` text NOT NULL,
	`addresses` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `customers_store_email` ON `customers` (`store_id`,`email`);--> statement-breakpoint
CREATE INDEX `customers_store_created` ON `customers` (`store_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `customers_store_updated` ON `customers` (`store_id`,`updated_at`,`id`);--> statement-breakpoint
CREATE TABLE `discounts` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`code` text NOT NULL,
	`type` text NOT NULL,
	`value` integer NOT NULL,
	`min_subtotal_cents` integer NOT NULL,
	`usage_limit` integer,
	`usage_count` integer NOT NULL,
	`active` integer NOT NULL,
	`starts_at` text,
	`ends_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `discounts_store_code` ON `discounts` (`store_id`,`code`);--> statement-breakpoint
CREATE INDEX `discounts_store_created` ON `discounts` (`store_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `discounts_store_updated` ON `discounts` (`store_id`,`updated_at`,`id`);--> statement-breakpoint
CREATE TABLE `draft_orders` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`status` text NOT NULL,
	`customer_id` text,
	`customer_email` text NOT NULL,
	`subtotal_cents` integer NOT NULL,
	`tax_cents` integer NOT NULL,
	`shipping_cents` integer NOT NULL,
	`total_cents` integer NOT NULL,
	`currency` text NOT NULL,
	`items` text NOT NULL,
	`shipping_address` text NOT NULL,
	`notes` text NOT NULL,
	`tags` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `draft_orders_store_created` ON `draft_orders` (`store_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `fulfillments` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`order_id` text NOT NULL,
	`status` text NOT NULL,
	`tracking_number` text NOT NULL,
	`tracking_company` text NOT NULL,
	`tracking_url` text NOT NULL,
	`items` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`order_id`) REFERENCES `orders`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `fulfillments_order` ON `fulfillments` (`order_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `orders` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`order_number` text NOT NULL,
	`status` text NOT NULL,
	`fulfillment_status` text NOT NULL,
	`customer_id` text,
	`customer_email` text NOT NULL,
	`subtotal_cents` integer NOT NULL,
	`tax_cents` integer NOT NULL,
	`shipping_cents` integer NOT NULL,
	`total_cents` integer NOT NULL,
	`refunded_cents` integer DEFAULT 0 NOT NULL,
	`currency` text NOT NULL,
	`items` text NOT NULL,
	`shipping_address` text NOT NULL,
	`payment_method` text NOT NULL,
	`notes` text NOT NULL,
	`tags` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `orders_store_created` ON `orders` (`store_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `orders_store_updated` ON `orders` (`store_id`,`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `orders_store_total` ON `orders` (`store_id`,`total_cents`,`id`);--> statement-breakpoint
CREATE INDEX `orders_store_customer` ON `orders` (`store_id`,`customer_id`);--> statement-breakpoint
CREATE TABLE `pages` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`title` text NOT NULL,
	`slug` text NOT NULL,
	`body` text NOT NULL,
	`published` integer NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `pages_store_slug` ON `pages` (`store_id`,`slug`);--> statement-breakpoint
CREATE INDEX `pages_store_created` ON `pages` (`store_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `pages_store_updated` ON `pages` (`store_id`,`updated_at`,`id`);--> statement-breakpoint
CREATE TABLE `products` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`name` text NOT NULL,
	`slug` text NOT NULL,
	`description` text NOT NULL,
	`status` text NOT NULL,
	`price_cents` integer NOT NULL,
	`compare_at_price_cents` integer,
	`currency` text NOT NULL,
	`sku` text NOT NULL,
	`barcode` text NOT NULL,
	`weight_milli` integer NOT NULL,
	`weight_unit` text NOT NULL,
	`track_inventory` integer NOT NULL,
	`inventory_quantity` integer NOT NULL,
	`category` text NOT NULL,
	`tags` text NOT NULL,
	`images` text NOT NULL,
	`metadata` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `products_store_slug` ON `products` (`store_id`,`slug`);--> statement-breakpoint
CREATE INDEX `products_store_created` ON `products` (`store_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `products_store_updated` ON `products` (`store_id`,`updated_at`,`id`);--> statement-breakpoint
CREATE INDEX `products_store_name` ON `products` (`store_id`,`name`,`id`);--> statement-breakpoint
CREATE INDEX `products_store_price` ON `products` (`store_id`,`price_cents`,`id`);--> statement-breakpoint
CREATE TABLE `refunds` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`order_id` text NOT NULL,
	`amount_cents` integer NOT NULL,
	`reason` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`order_id`) REFERENCES `orders`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `refunds_order` ON `refunds` (`order_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `shipping_labels` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`order_id` text NOT NULL,
	`carrier` text NOT NULL,
	`service` text NOT NULL,
	`tracking_number` text NOT NULL,
	`label_url` text NOT NULL,
	`cost_cents` integer NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`order_id`) REFERENCES `orders`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `shipping_labels_order` ON `shipping_labels` (`order_id`);--> statement-breakpoint
CREATE TABLE `shipping_zones` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`name` text NOT NULL,
	`countries` text NOT NULL,
	`rates` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `shipping_zones_store_created` ON `shipping_zones` (`store_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `store_visits` (
	`store_id` text NOT NULL,
	`day` text NOT NULL,
	`sessions` integer NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `store_visits_store_day` ON `store_visits` (`store_id`,`day`);--> statement-breakpoint
CREATE TABLE `stores` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`domain` text NOT NULL,
	`currency` text NOT NULL,
	`language` text NOT NULL,
	`email` text NOT NULL,
	`timezone` text NOT NULL,
	`country` text NOT NULL,
	`next_order_number` integer DEFAULT 1001 NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `variants` (
	`id` text PRIMARY KEY NOT NULL,
	`store_id` text NOT NULL,
	`product_id` text NOT NULL,
	`title` text NOT NULL,
	`sku` text NOT NULL,
	`price_cents` integer NOT NULL,
	`compare_at_price_cents` integer,
	`inventory_quantity` integer NOT NULL,
	`options` text NOT NULL,
	`position` integer NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`store_id`) REFERENCES `stores`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`product_id`) REFERENCES `products`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `variants_product` ON `variants` (`product_id`,`position`);--> statement-breakpoint
CREATE INDEX `variants_store_created` ON `variants` (`store_id`,`created_at`,`id`);