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
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	_ "github.com/lossless-engine/contextengine/lossless/badger"   // --store DIR
	_ "github.com/lossless-engine/contextengine/lossless/postgres" // --store postgres://…
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go interrupted(ctx, stop)
	code := run(ctx, os.Args[1:], &stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr})
	stop()
	os.Exit(code)
}

// interruptGrace is how long a command may take to stop after SIGINT or
// SIGTERM before the process exits without it.
const interruptGrace = 5 * time.Second

// interrupted bounds the time a command takes to stop once a signal
// cancelled ctx: a write stuck on a full disk, or a Close waiting for
// one, does not keep the process alive. A second signal ends it at once
// (stop restores the default action). Exiting without closing the store
// is safe: both backends recover what they acknowledged after a crash
// (Badger replays its log at the next open for writing).
func interrupted(ctx context.Context, stop context.CancelFunc) {
	<-ctx.Done()
	stop()
	time.Sleep(interruptGrace)
	fmt.Fprintf(os.Stderr, "lossless: interrupted: the command did not stop within %v; exiting without closing the store (what it acknowledged is kept: the store recovers it when next opened for writing)\n", interruptGrace)
	os.Exit(1)
}
