package lossless

import (
	"encoding/json"
	"github.com/lossless-engine/contextengine/lossless/config"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// TestPluginManifestSchema: the OpenClaw plugin's configSchema names every
// field of Config (and of its recall and retention sections) that a user
// may set, so the manifest cannot fall behind the engine's config.
func TestPluginManifestSchema(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "openclaw-plugin", "openclaw.plugin.json"))
	if err != nil {
		t.Skipf("the plugin's manifest is not beside the module: %v", err)
	}
	type schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	var man struct {
		ConfigSchema schema `json:"configSchema"`
	}
	if err := json.Unmarshal(b, &man); err != nil {
		t.Fatalf("openclaw.plugin.json: %v", err)
	}
	check := func(where string, props map[string]json.RawMessage, typ reflect.Type) {
		t.Helper()
		for i := 0; i < typ.NumField(); i++ {
			name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if _, ok := props[name]; !ok {
				t.Errorf("%s: the manifest's configSchema lacks %q", where, name)
			}
		}
	}
	props := man.ConfigSchema.Properties
	check("config", props, reflect.TypeOf(config.Config{}))
	for name, typ := range map[string]reflect.Type{"recall": reflect.TypeOf(config.Recall{}), "retention": reflect.TypeOf(config.RetentionConfig{})} {
		var sub schema
		if err := json.Unmarshal(props[name], &sub); err != nil {
			t.Fatalf("configSchema.%s: %v", name, err)
		}
		check("config."+name, sub.Properties, typ)
	}
}
