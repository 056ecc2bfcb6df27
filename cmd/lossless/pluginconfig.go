package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/summarize"
	"github.com/lossless-engine/contextengine/ui"
)

// pluginOnlyOptions are the options of plugins.entries.lossless.config
// that the OpenClaw plugin reads itself and does not pass to the engine
// (openclaw-plugin/lib/engine.js, sharedClient; the manifest's schema says
// "not passed to the engine"). Every other option of the manifest's schema
// is the engine's (TestDoctorAcceptsManifestOptions checks both).
var pluginOnlyOptions = []string{"bridge", "uiAddr"}

// pluginOptions are the plugin-only options doctor reads.
type pluginOptions struct {
	// UIAddr is uiAddr: the loopback address the engine process serves
	// the memory explorer on.
	UIAddr string
}

// splitPluginConfig returns the plugin's config raw without the
// plugin-only options, which it returns apart (checked as the manifest's
// schema types them). raw empty or null gives an empty engine config.
func splitPluginConfig(raw json.RawMessage) (json.RawMessage, pluginOptions, error) {
	var opts pluginOptions
	if s := strings.TrimSpace(string(raw)); s == "" || s == "null" {
		return nil, opts, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, opts, fmt.Errorf("lossless: plugin config is not a JSON object: %w", err)
	}
	if v, ok := obj["uiAddr"]; ok {
		if err := json.Unmarshal(v, &opts.UIAddr); err != nil {
			return nil, opts, fmt.Errorf("lossless: plugin config: uiAddr: %w", err)
		}
		if err := ui.CheckAddr(opts.UIAddr); err != nil {
			return nil, opts, fmt.Errorf("lossless: plugin config: uiAddr: %w", err)
		}
	}
	if v, ok := obj["bridge"]; ok {
		var b map[string]json.RawMessage
		if err := json.Unmarshal(v, &b); err != nil {
			return nil, opts, fmt.Errorf("lossless: plugin config: bridge is not an object: %w", err)
		}
	}
	for _, k := range pluginOnlyOptions {
		delete(obj, k)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, opts, fmt.Errorf("lossless: plugin config: %w", err)
	}
	return out, opts, nil
}

// summarizerReport is the summarizer the plugin's engine process uses
// (under OpenClaw: the plugin's initialize says host "openclaw").
type summarizerReport struct {
	// Kind is the summarizer kind: "host", "extractive", "openai", "anthropic".
	Kind string `json:"kind"`
	// Default is true when the config names no kind.
	Default bool `json:"default"`
	// Fallback is the summarizer that answers over the cap or when the
	// model fails ("extractive"; empty for the extractive kind).
	Fallback string `json:"fallback,omitempty"`
	// MaxCallsPerHour and MaxTokensPerHour are the spend cap, per engine
	// process (-1: unlimited); zero for the extractive kind.
	MaxCallsPerHour  int `json:"maxCallsPerHour,omitempty"`
	MaxTokensPerHour int `json:"maxTokensPerHour,omitempty"`
}

// pluginSummarizer describes the summarizer the engine process the plugin
// starts would use with config pc (its Host set as the plugin sets it).
func pluginSummarizer(pc config.Config) (*summarizerReport, error) {
	pc.Host = core.HostOpenClaw
	sc, err := pc.SummarizerConfig()
	if err != nil {
		return nil, err
	}
	var explicit struct {
		Kind string `json:"kind"`
	}
	_ = json.Unmarshal(pc.Summarizer, &explicit)
	r := &summarizerReport{Kind: strings.ToLower(sc.Kind), Default: explicit.Kind == ""}
	if r.Kind == summarize.KindExtractive {
		return r, nil
	}
	u := summarize.NewSpendCap(sc.MaxCallsPerHour, sc.MaxTokensPerHour).Usage()
	r.Fallback, r.MaxCallsPerHour, r.MaxTokensPerHour = summarize.KindExtractive, u.MaxCalls, u.MaxTokens
	return r, nil
}

// printSummarizer writes doctor's summarizer line.
func printSummarizer(w io.Writer, r *summarizerReport) {
	if r == nil {
		return
	}
	what := map[string]string{summarize.KindHost: "OpenClaw's model for the session", summarize.KindExtractive: "offline, no model calls"}[r.Kind]
	if what == "" {
		what = "a model called directly"
	}
	if r.Default {
		what += ", the plugin's default"
	}
	fmt.Fprintf(w, "summarizer %s (%s)", r.Kind, what)
	if r.Fallback != "" {
		limit := func(n int, unit string) string {
			if n < 0 {
				return "unlimited " + unit
			}
			return fmt.Sprintf("%d %s", n, unit)
		}
		fmt.Fprintf(w, ": at most %s and %s an hour per engine process, the %s summarizer beyond that",
			limit(r.MaxCallsPerHour, "calls"), limit(r.MaxTokensPerHour, "tokens"), r.Fallback)
	}
	fmt.Fprintln(w)
}
