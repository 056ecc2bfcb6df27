// Command lossless is the lossless context engine's command for people and
// scripts: import OpenClaw session transcripts into a store, list sessions
// and stats, show what the model would see (assemble), compact, search and
// expand history, export a conversation byte for byte, diagnose an OpenClaw
// setup (doctor), and serve the engine to OpenClaw's plugin over stdio
// (serve --stdio).
//
// Every subcommand takes --store DIR or --store postgres://… (default:
// $LOSSLESS_STORE, else $XDG_DATA_HOME/lossless, else
// ~/.local/share/lossless), --help, and --json
// for machine-readable output. Exit codes: 0 success, 1 runtime error, 2
// usage error. See README.md beside this file.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	_ "github.com/lossless-engine/contextengine/lossless/postgres" // --store postgres://…
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], &stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr})
	stop()
	os.Exit(code)
}
