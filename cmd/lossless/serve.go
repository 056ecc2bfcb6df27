package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lossless-engine/contextengine/bridge"
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/summarize"
	"github.com/lossless-engine/contextengine/ui"
)

func cmdServe() *command {
	var stdioFlag bool
	var timingPath string
	var maxLine, maxInFlight, maxQueued, maxQueuedBytes int
	var uiAddr string
	return &command{
		name: "serve", args: "--stdio",
		summary: "Serve the engine over newline-delimited JSON-RPC 2.0 on stdin/stdout (used by the OpenClaw plugin); --ui ADDR also serves the memory explorer of that engine.",
		flags: func(fs *flag.FlagSet, c *cmdEnv) {
			fs.BoolVar(&stdioFlag, "stdio", false, "speak JSON-RPC on stdin/stdout (the only transport)")
			fs.IntVar(&maxLine, "max-line-bytes", bridge.DefaultMaxLineBytes, "refuse a request line longer than this (a clear parse error; keep it above maxMessageBytes)")
			fs.IntVar(&maxInFlight, "max-in-flight", bridge.DefaultMaxInFlight, "requests served at once; later ones wait in order")
			fs.IntVar(&maxQueued, "max-queued", bridge.DefaultMaxQueued, "requests waiting for a slot; beyond it a request is refused at once (server busy, retry)")
			fs.IntVar(&maxQueuedBytes, "max-queued-bytes", bridge.DefaultMaxQueuedBytes, "bytes of the requests waiting for a slot; a request beyond it is refused at once (server busy, retry)")
			fs.StringVar(&timingPath, "timing", "", "append one JSON line per request served ({method, startMs, ms, ok}: the time inside the engine) to this file")
			fs.StringVar(&uiAddr, "ui", "", "also serve the memory explorer (lossless ui) of the engine this process opens, on this loopback address (127.0.0.1:0: a free port); its URL, with a token kept in the store directory, goes to stderr and to the store's ui-url file; see lossless ui --url")
		},
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) > 0 {
				return usagef("serve takes no arguments")
			}
			if !stdioFlag {
				return usagef("serve needs --stdio (the only transport)")
			}
			logf := func(format string, a ...any) {
				fmt.Fprintf(c.io.err, "lossless serve: "+strings.TrimSuffix(format, "\n")+"\n", a...)
			}
			opts := bridge.Options{
				ServerName: "lossless", ServerVersion: binaryVersion(), Logf: logf,
				// lossless.Engine.AfterTurn stores p.NewMessages() and skips
				// messages already stored.
				AfterTurnNewMessagesOnly: true, MaxLineBytes: maxLine, MaxInFlight: maxInFlight, MaxQueued: maxQueued, MaxQueuedBytes: maxQueuedBytes}
			if timingPath != "" {
				f, err := os.OpenFile(timingPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
				if err != nil {
					return fmt.Errorf("serve: timing file: %w", err)
				}
				defer f.Close()
				var mu sync.Mutex
				opts.Timing = func(method string, start time.Time, d time.Duration, ok bool) {
					line := fmt.Sprintf("{\"method\":%q,\"startMs\":%d,\"ms\":%.3f,\"ok\":%v}\n", method, start.UnixMilli(), float64(d.Microseconds())/1000, ok)
					mu.Lock()
					defer mu.Unlock()
					_, _ = f.WriteString(line)
				}
			}
			factory := serveFactory(c)
			if uiAddr != "" {
				var stop func()
				var err error
				last := &ui.LastAssembles{}
				opts.OnAssemble = last.Record
				if factory, opts.Explorer, stop, err = serveExplorer(ctx, c, uiAddr, factory, last.Get); err != nil {
					return err
				}
				defer stop()
			}
			err := bridge.Serve(ctx, c.io.in, c.io.out, factory, opts)
			if errors.Is(err, context.Canceled) {
				return nil // a signal: a normal shutdown
			}
			return err
		},
	}
}

// serveExplorer serves the memory explorer (package ui) on addr for the
// engine the bridge's factory opens: it wraps factory to keep the engine it
// makes. The explorer starts with the first engine, once the store is known:
// its token is the one kept with the store (explorerToken, made on first
// use), its port the last one when addr asks for any (port 0) and that one
// is free, and its URL is written to the store's ui-url file (0600) and to
// stderr (stdout is JSON-RPC). After the engine is closed the API answers
// 503 until a new initialize. A failure to start the explorer is logged;
// the engine is served anyway. The context view shows the last assemble
// of a session that last returns (recorded by the bridge). info answers the bridge's explorer method
// (the plugin's Memory tab proxies the explorer with it); stop ends the
// explorer.
func serveExplorer(ctx context.Context, c *cmdEnv, addr string, factory core.Factory, last func(string) (ui.LastAssemble, bool)) (core.Factory, func(context.Context) (bridge.ExplorerInfo, error), func(), error) {
	if err := ui.CheckAddr(addr); err != nil {
		return nil, nil, nil, fmt.Errorf("serve --ui: %w", err)
	}
	var opened atomic.Pointer[lossless.Engine]
	src := func(context.Context) (*lossless.Engine, error) {
		if e := opened.Load(); e != nil {
			return e, nil
		}
		return nil, ui.ErrNotOpen
	}
	var (
		mu      sync.Mutex
		srv     *ui.Server
		done    chan struct{}
		stopped bool
		where   bridge.ExplorerInfo
		failure error
	)
	logf := logTo(c, "lossless serve: ui")
	start := func(e *lossless.Engine) error {
		mu.Lock()
		defer mu.Unlock()
		if srv != nil || stopped {
			return nil
		}
		cfg := e.Config()
		store := cfg.StoreDir
		if cfg.StoreURL != "" {
			store = cfg.StoreURL
		}
		dir, err := explorerStateDir(store)
		if err != nil {
			return err
		}
		token, err := explorerToken(dir)
		if err != nil {
			return err
		}
		s, err := ui.New(src, ui.Options{Logf: logf, Token: token, LastAssemble: last})
		if err != nil {
			return err
		}
		url, err := explorerListen(s, addr, dir)
		if err != nil {
			return err
		}
		file := filepath.Join(dir, explorerURLFile)
		if err := writeExplorerURL(dir, url); err != nil {
			logf("%v", err)
			file = ""
		}
		srv, done = s, make(chan struct{})
		where = bridge.ExplorerInfo{URL: strings.TrimSuffix(url, "?token="+token), Token: token}
		go func() {
			defer close(done)
			if err := s.Serve(ctx); err != nil {
				logf("%v", err)
			}
		}()
		if file != "" {
			fmt.Fprintf(c.io.err, "lossless serve: memory explorer (lossless ui) at %s (URL and token also in %s, owner-only; `lossless ui --url` prints it)\n", url, file)
		} else {
			fmt.Fprintf(c.io.err, "lossless serve: memory explorer (lossless ui) at %s\n", url)
		}
		return nil
	}
	wrapped := func(ctx context.Context, o core.FactoryOptions) (core.Engine, error) {
		e, err := factory(ctx, o)
		if le, ok := e.(*lossless.Engine); ok && err == nil {
			opened.Store(le)
			if err := start(le); err != nil {
				logf("not served: %v", err)
				mu.Lock()
				failure = err
				mu.Unlock()
			}
		}
		return e, err
	}
	stop := func() {
		mu.Lock()
		stopped = true
		s, d := srv, done
		mu.Unlock()
		if s != nil {
			s.Close()
			<-d
		}
	}
	info := func(context.Context) (bridge.ExplorerInfo, error) {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case where.URL != "":
			return where, nil
		case failure != nil:
			return bridge.ExplorerInfo{}, fmt.Errorf("the memory explorer could not start: %w", failure)
		}
		return bridge.ExplorerInfo{}, ui.ErrNotOpen
	}
	return wrapped, info, stop, nil
}

// serveFactory wraps lossless.NewFactory, with one summarizer spend
// (summarize.NewSpend) for every engine the process makes, so that they
// share the spend cap: the config comes from initialize
// (plugins.entries.lossless.config); when it names no storeDir the
// command's store is used (--store, $LOSSLESS_STORE, the per-user default),
// so `lossless stats` and the plugin see the same store by default. --agent,
// when given, is the default agent unless the config sets agentId.
func serveFactory(c *cmdEnv) core.Factory {
	factory := lossless.NewFactory(summarize.NewSpend())
	return func(ctx context.Context, opts core.FactoryOptions) (core.Engine, error) {
		defaults := map[string]any{"storeDir": c.store}
		if c.storeURL() {
			// The command's database, unless the config names a store of
			// its own (a storeDir there means Badger).
			defaults = map[string]any{}
			if !hasKey(opts.Config, "storeDir") {
				defaults["storeUrl"] = c.store
			}
		}
		if c.tokenizer != "" {
			defaults["tokenizer"] = c.tokenizer
		}
		cfg, err := withDefaults(opts.Config, defaults, c.agentSet, c.agent)
		if err != nil {
			return nil, err
		}
		opts.Config = cfg
		return factory(ctx, opts)
	}
}

// hasKey reports whether the JSON object raw has key (false when raw is no
// object: withDefaults reports that).
func hasKey(raw json.RawMessage, key string) bool {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return false
	}
	_, ok := obj[key]
	return ok
}

// withDefaults sets keys absent from the JSON object raw.
func withDefaults(raw json.RawMessage, defaults map[string]any, agentSet bool, agent string) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if s := strings.TrimSpace(string(raw)); s != "" && s != "null" {
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("engine config is not a JSON object: %w", err)
		}
	}
	if agentSet {
		defaults["agentId"] = agent
	}
	for k, v := range defaults {
		if _, ok := obj[k]; ok {
			continue
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		obj[k] = b
	}
	return encodeJSON(obj)
}

// encodeJSON marshals v without HTML escaping.
func encodeJSON(v any) (json.RawMessage, error) {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(strings.TrimRight(sb.String(), "\n")), nil
}
