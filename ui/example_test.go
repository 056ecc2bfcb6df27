package ui_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless"
	"github.com/lossless-engine/contextengine/lossless/config"
	"github.com/lossless-engine/contextengine/ui"
)

// ExampleNew serves the explorer for an engine and reads its session list
// the way the page does: with the token in a header. A real program calls
// Listen and Serve instead of httptest, and prints the URL Listen returns.
func ExampleNew() {
	dir, _ := os.MkdirTemp("", "ui-example-")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	cfg := config.Default()
	cfg.StoreDir = dir
	cfg.Tokenizer = core.CounterChars4
	e, err := lossless.Open(ctx, cfg)
	if err != nil {
		panic(err)
	}
	defer e.Close()
	e.Ingest(ctx, core.IngestParams{SessionID: "s1", Message: core.UserText("hello, memory", 1_700_000_000_000)})

	srv, err := ui.New(func(context.Context) (*lossless.Engine, error) { return e, nil }, ui.Options{})
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(srv) // srv.Listen("127.0.0.1:0") and srv.Serve(ctx) in a program
	defer ts.Close()

	req, _ := http.NewRequest(http.MethodGet, ts.URL+"/api/sessions", nil)
	req.Header.Set(ui.TokenHeader, srv.Token())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		panic(err)
	}
	defer resp.Body.Close()
	var list struct {
		Total int `json:"total"`
		Items []struct {
			Agent        string `json:"agent"`
			Session      string `json:"session"`
			Messages     int    `json:"messages"`
			ActiveTokens int    `json:"activeTokens"`
			FirstMessage int64  `json:"firstMessage"`
		} `json:"items"`
	}
	json.NewDecoder(resp.Body).Decode(&list)
	fmt.Println(resp.StatusCode, list.Total, list.Items[0].Agent, list.Items[0].Session, list.Items[0].Messages, list.Items[0].FirstMessage)

	// Without the token: refused.
	resp2, _ := http.Get(ts.URL + "/api/sessions")
	resp2.Body.Close()
	fmt.Println(resp2.StatusCode)
	// Output:
	// 200 1 main s1 1 1700000000000
	// 403
}
