package lossless

import (
	"context"

	contextengine "github.com/lossless-engine/contextengine"
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/summarize"
)

// Owner is the owner name the engine registers under.
const Owner = "lossless-engine"

func init() {
	// database/sql style: importing this package registers the engine.
	// The engines the registry makes are the process's (a gateway's
	// agents): they share one summarizer spend cap.
	if err := contextengine.Register(EngineID, NewFactory(summarize.NewSpend()), Owner); err != nil {
		panic("lossless: register: " + err.Error())
	}
}

// NewFactory returns a core.Factory that decodes FactoryOptions.Config
// (JSON) over DefaultConfig, resolves the store directory
// (config.DefaultStoreDir(opts.AgentDir) when storeDir and storeUrl are empty),
// sets Config.Host from opts.Host (under OpenClaw the default summarizer
// is the host's model) and Config.Spend to spend, and opens the engine. A
// process that makes several engines hands them one spend
// (summarize.NewSpend), so that they share the summarizer's spend guard
// and cap; with nil each engine has its own.
func NewFactory(spend *summarize.Spend) core.Factory {
	return func(ctx context.Context, opts core.FactoryOptions) (core.Engine, error) {
		cfg, err := config.Parse(opts.Config)
		if err != nil {
			return nil, err
		}
		cfg.Host = opts.Host
		cfg.Spend = spend
		if cfg.StoreDir == "" && cfg.StoreURL == "" {
			dir, err := config.DefaultStoreDir(opts.AgentDir)
			if err != nil {
				return nil, err
			}
			cfg.StoreDir = dir
		}
		return Open(ctx, cfg)
	}
}
