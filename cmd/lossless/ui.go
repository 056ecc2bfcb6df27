package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/ui"
)

func cmdUI() *command {
	var addr string
	return &command{
		name: "ui", args: "",
		summary: "Serve the memory explorer (a web page on 127.0.0.1, token in its URL) for the store until interrupted; prints the URL.",
		flags: func(fs *flag.FlagSet, c *cmdEnv) {
			fs.StringVar(&addr, "addr", "127.0.0.1:0", "the address to serve on (a loopback address; port 0: a free one)")
		},
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) > 0 {
				return usagef("ui takes no arguments")
			}
			// Read-write, as `lossless assemble` opens it: the recall index
			// is only open for writing (the context and recall views use it).
			e, err := openEngine(ctx, c, false, nil)
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
