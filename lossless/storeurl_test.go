package lossless

import (
	"context"
	"strings"
	"testing"
)

// TestStoreURLConfig: storeUrl is read from the config and selects no
// directory; a value that is not a PostgreSQL URL is refused naming it;
// RedactURL hides a password (also in a URL that does not parse).
func TestStoreURLConfig(t *testing.T) {
	cfg, err := ParseConfig([]byte(`{"storeUrl":"postgres://u:pw@db.example/lossless"}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.StoreURL != "postgres://u:pw@db.example/lossless" || validate(cfg) != nil {
		t.Fatalf("storeUrl %q, validate %v", cfg.StoreURL, validate(cfg))
	}
	bad := DefaultConfig()
	bad.StoreURL = "mysql://u:pw@db/x"
	_, err = Open(context.Background(), bad)
	if err == nil || !strings.Contains(err.Error(), "storeUrl") || strings.Contains(err.Error(), "pw@") {
		t.Fatalf("a non-PostgreSQL storeUrl: %v", err)
	}
	// No opener registered for postgres:// in this package's tests (package
	// lossless/postgres registers it): the error says what to import.
	nothing := DefaultConfig()
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
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	for s, want := range map[string]bool{"postgres://h/db": true, "postgresql://h/db": true, "/tmp/postgres://": false, "": false} {
		if IsStoreURL(s) != want {
			t.Errorf("IsStoreURL(%q) = %v", s, !want)
		}
	}
}
