package lossless

import (
	"context"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/lossless/config"
)

// TestStoreURLConfig: storeUrl is read from the config and selects no
// directory; a value that is not a PostgreSQL URL is refused naming it;
// RedactURL hides a password (also in a URL that does not parse).
func TestStoreURLConfig(t *testing.T) {
	cfg, err := config.Parse([]byte(`{"storeUrl":"postgres://u:pw@db.example/lossless"}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StoreURL != "postgres://u:pw@db.example/lossless" || validate(cfg) != nil {
		t.Fatalf("storeUrl %q, validate %v", cfg.StoreURL, validate(cfg))
	}
	bad := config.Default()
	bad.StoreURL = "mysql://u:pw@db/x"
	_, err = Open(context.Background(), bad)
	if err == nil || !strings.Contains(err.Error(), "storeUrl") || strings.Contains(err.Error(), "pw@") {
		t.Fatalf("a non-PostgreSQL storeUrl: %v", err)
	}
	// No opener registered for postgres:// in this package's tests (package
	// lossless/postgres registers it): the error says what to import.
	nothing := config.Default()
	nothing.StoreURL = "postgres://u:pw@127.0.0.1:1/x"
	if _, err = Open(context.Background(), nothing); err == nil || !strings.Contains(err.Error(), "lossless/postgres") || strings.Contains(err.Error(), "pw@") {
		t.Fatalf("storeUrl without a registered opener: %v", err)
	}
	for in, want := range map[string]string{
		"postgres://u:pw@h/db":      "postgres://u:xxxxx@h/db",
		"postgresql://u@h/db":       "postgresql://u@h/db",
		"postgres://u:pw@[::1/db":   "postgres://xxxxx@[::1/db",
		"/var/lib/lossless":         "/var/lib/lossless",
		"postgres:///db?host=/sock": "postgres:///db?host=/sock",
	} {
		if got := config.RedactURL(in); got != want {
			t.Errorf("config.RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	for s, want := range map[string]bool{"postgres://h/db": true, "postgresql://h/db": true, "/tmp/postgres://": false, "": false} {
		if config.IsStoreURL(s) != want {
			t.Errorf("config.IsStoreURL(%q) = %v", s, !want)
		}
	}
}
