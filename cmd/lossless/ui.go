package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/ui"
)

func cmdUI() *command {
	var addr string
	var printURL, rotate bool
	return &command{
		name: "ui", args: "",
		summary: "Serve the memory explorer (a web page on 127.0.0.1, token in its URL) for the store until interrupted; prints the URL. --url prints the URL of the explorer an engine process (serve --ui, the OpenClaw plugin's uiAddr) serves for the store; --rotate-token replaces that explorer's token.",
		flags: func(fs *flag.FlagSet, c *cmdEnv) {
			fs.StringVar(&addr, "addr", "127.0.0.1:0", "the address to serve on (a loopback address; port 0: a free one)")
			fs.BoolVar(&printURL, "url", false, "print the URL, with its token, of the explorer the engine process serving the store wrote to the store's ui-url file, and exit (the store is not opened)")
			fs.BoolVar(&rotate, "rotate-token", false, "replace the token kept in the store directory for the engine process's explorer; it takes effect when that process next starts (restart OpenClaw's gateway)")
		},
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) > 0 {
				return usagef("ui takes no arguments")
			}
			if printURL || rotate {
				return explorerFiles(c, printURL, rotate)
			}
			// Read-write, as `lossless assemble` opens it: the recall index
			// is only open for writing (the context and recall views use
			// it); read-only on a full disk.
			e, _, err := openWriterOrReader(ctx, c, "ui", "so its recall views find nothing (the recall index opens only for writing) and nothing is written")
			if err != nil {
				if errors.Is(err, errStoreBusy) {
					return fmt.Errorf("%w\nthe process holding a Badger store serves the explorer itself: `lossless serve --stdio --ui 127.0.0.1:0`, or the OpenClaw plugin's uiAddr option", err)
				}
				return err
			}
			defer e.Close()
			srv, err := ui.New(func(context.Context) (*lossless.Engine, error) { return e, nil }, ui.Options{Logf: logTo(c, "lossless ui")})
			if err != nil {
				return err
			}
			url, err := srv.Listen(addr)
			if err != nil {
				return err
			}
			if c.json {
				if err := printJSON(c.io.out, map[string]string{"url": url, "store": c.storeName()}); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(c.io.out, "lossless ui: the memory explorer of %s is at\n%s\n(interrupt to stop)\n", c.storeName(), url)
			}
			return srv.Serve(ctx)
		},
	}
}

// logTo returns a Logf writing prefixed lines to the command's stderr.
func logTo(c *cmdEnv, prefix string) func(format string, a ...any) {
	return func(format string, a ...any) {
		fmt.Fprintf(c.io.err, prefix+": "+strings.TrimSuffix(format, "\n")+"\n", a...)
	}
}

// explorerFiles serves `ui --url` and `ui --rotate-token`: they read or
// write the explorer's files of the store (explorerStateDir) and open
// nothing else.
func explorerFiles(c *cmdEnv, printURL, rotate bool) error {
	dir, err := explorerStateDir(c.store)
	if err != nil {
		return err
	}
	if rotate {
		if _, err := os.Stat(dir); err != nil && !c.storeURL() {
			return fmt.Errorf("lossless: ui: store %s: %w", c.storeName(), err)
		}
		if _, err := rotateExplorerToken(dir); err != nil {
			return err
		}
		fmt.Fprintf(c.io.err, "lossless ui: a new token is in %s: the engine process serving the explorer uses it from its next start (restart OpenClaw's gateway); until then the old URL stays valid\n", filepath.Join(dir, explorerTokenFile))
		if !printURL {
			return nil
		}
	}
	u, err := readExplorerURL(dir)
	if errors.Is(err, errNoExplorerURL) {
		return fmt.Errorf("lossless: ui: no engine process has served the memory explorer of %s (no %s): start it with the OpenClaw plugin's uiAddr option (or `lossless serve --stdio --ui 127.0.0.1:0`), or pass the store the plugin uses with --store", c.storeName(), filepath.Join(dir, explorerURLFile))
	}
	if err != nil {
		return err
	}
	live := explorerListening(u)
	if c.json {
		return printJSON(c.io.out, map[string]any{"url": u, "file": filepath.Join(dir, explorerURLFile), "listening": live})
	}
	fmt.Fprintln(c.io.out, u)
	if !live {
		fmt.Fprintf(c.io.err, "lossless ui: nothing listens at that address now: the engine process that wrote it has stopped (the URL comes back with it)\n")
	}
	return nil
}
