package main

import (
	"encoding/json"
	"fmt"
	"strings"

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
