package main

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/store/pgstore"
)

func cmdMigrate() *command {
	return &command{
		name: "migrate", args: "",
		summary: "Apply a PostgreSQL store's schema ahead of time (--store postgres://…) and print its version before and after; a Badger store has nothing to migrate.",
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) > 0 {
				return usagef("migrate takes no arguments")
			}
			if !c.storeURL() {
				if c.json {
					return printJSON(c.io.out, map[string]any{"store": c.store, "migrated": false,
						"reason": "a Badger store: its format is migrated as it opens"})
				}
				fmt.Fprintf(c.io.out, "store %s is a Badger directory: nothing to migrate (its format is migrated as it opens)\n", c.storeName())
				return nil
			}
			before, after, err := migrateURL(ctx, c.store)
			if err != nil {
				return err
			}
			if c.json {
				return printJSON(c.io.out, map[string]any{"store": c.storeName(), "migrated": after != before,
					"before": before, "after": after, "binary": pgstore.SchemaVersion()})
			}
			if before == after {
				fmt.Fprintf(c.io.out, "store %s: schema version %d, up to date (this binary's is %d)\n", c.storeName(), after, pgstore.SchemaVersion())
				return nil
			}
			fmt.Fprintf(c.io.out, "store %s: schema version %d -> %d\n", c.storeName(), before, after)
			return nil
		},
	}
}

// migrateURL applies the schema of the PostgreSQL database at url
// (pgstore.Migrate, under its advisory lock) and returns the versions
// before and after.
func migrateURL(ctx context.Context, url string) (before, after int, err error) {
	name := config.RedactURL(url)
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return 0, 0, fmt.Errorf("store %s: not a usable PostgreSQL URL: %w", name, err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return 0, 0, fmt.Errorf("store %s: %w", name, err)
	}
	defer pool.Close()
	if err := pool.Ping(ctx); err != nil {
		return 0, 0, fmt.Errorf("store %s: cannot reach the server: %w", name, err)
	}
	before, after, err = pgstore.Migrate(ctx, pool)
	if err != nil {
		return before, after, fmt.Errorf("store %s: %w", name, err)
	}
	return before, after, nil
}
