package summarize

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lossless-engine/contextengine/core"
)

// reply is one scripted answer of a fake provider.
type reply struct {
	status  int
	header  map[string]string
	body    string        // full JSON body (errors)
	content string        // OpenAI: message content; Anthropic: text block
	think   string        // Anthropic: a thinking block before the text
	hang    bool          // wait until the client gives up
	delay   time.Duration // wait before answering
}

// fakeProvider is an httptest server speaking OpenAI's /v1/chat/completions
// or Anthropic's /v1/messages wire format, answering from a script (the last
// reply repeats) and recording the request bodies.
type fakeProvider struct {
	srv     *httptest.Server
	mu      sync.Mutex
	script  []reply
	calls   atomic.Int32
	bodies  []map[string]any
	headers []http.Header
}

func newFakeProvider(t *testing.T, kind string, script ...reply) *fakeProvider {
	fp := &fakeProvider{script: script}
	path := "/v1/chat/completions"
	if kind == KindAnthropic {
		path = "/v1/messages"
	}
	fp.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path || r.Method != http.MethodPost {
			http.Error(w, "unexpected "+r.Method+" "+r.URL.Path, http.StatusNotFound)
			return
		}
		raw, _ := io.ReadAll(r.Body)
		var body map[string]any
		if err := json.Unmarshal(raw, &body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n := int(fp.calls.Add(1)) - 1
		fp.mu.Lock()
		fp.bodies = append(fp.bodies, body)
		fp.headers = append(fp.headers, r.Header.Clone())
		rep := fp.script[min(n, len(fp.script)-1)]
		fp.mu.Unlock()
		if rep.hang {
			select {
			case <-r.Context().Done():
			case <-time.After(5 * time.Second):
			}
			return
		}
		time.Sleep(rep.delay)
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		if rep.status != 0 && rep.status != 200 {
			w.WriteHeader(rep.status)
			io.WriteString(w, rep.body)
			return
		}
		var resp any
		if kind == KindAnthropic {
			var content []map[string]any
			if rep.think != "" {
				content = append(content, map[string]any{"type": "thinking", "thinking": rep.think, "signature": "sig"})
			}
			if rep.content != "" {
				content = append(content, map[string]any{"type": "text", "text": rep.content})
			}
			resp = map[string]any{"id": "msg_1", "type": "message", "role": "assistant", "model": body["model"],
				"content": content, "stop_reason": "end_turn", "stop_sequence": nil,
				"usage": map[string]any{"input_tokens": 10, "output_tokens": 5}}
		} else {
			resp = map[string]any{"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": body["model"],
				"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
					"message": map[string]any{"role": "assistant", "content": rep.content}}},
				"usage": map[string]any{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}
		}
		json.NewEncoder(w).Encode(resp)
	}))
	t.Cleanup(fp.srv.Close)
	return fp
}

func (fp *fakeProvider) model(t *testing.T, kind string) *Model {
	t.Helper()
	var m *Model
	var err error
	if kind == KindAnthropic {
		m, err = NewAnthropic(AnthropicConfig{Model: "claude-test", BaseURL: fp.srv.URL, APIKey: "k-test", Timeout: 10 * time.Second})
	} else {
		m, err = NewOpenAI(OpenAIConfig{Model: "llama-test", BaseURL: fp.srv.URL + "/v1", APIKey: "k-test", Timeout: 10 * time.Second})
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

var modelReq = core.SummarizeRequest{Text: sampleConversation, TargetTokens: 200, Kind: core.SummaryCompaction, Focus: "rollback"}

func TestModelWireFormat(t *testing.T) {
	for _, kind := range []string{KindOpenAI, KindAnthropic} {
		t.Run(kind, func(t *testing.T) {
			fp := newFakeProvider(t, kind, reply{content: "## Goal\n- migrate the store", think: "private reasoning"})
			m := fp.model(t, kind)
			out, err := m.Summarize(context.Background(), modelReq)
			if err != nil {
				t.Fatal(err)
			}
			if out != "## Goal\n- migrate the store" {
				t.Fatalf("out = %q", out)
			}
			body := fp.bodies[0]
			var system, user string
			if kind == KindAnthropic {
				if anthropicKey(fp.headers[0]) != "k-test" || fp.headers[0].Get("Anthropic-Version") == "" {
					t.Errorf("headers: %v", fp.headers[0])
				}
				system = body["system"].([]any)[0].(map[string]any)["text"].(string)
				msgs := body["messages"].([]any)
				user = msgs[0].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
				if body["max_tokens"].(float64) < 200 {
					t.Errorf("max_tokens = %v", body["max_tokens"])
				}
				if m.Name() != "anthropic:claude-test" {
					t.Errorf("name %q", m.Name())
				}
			} else {
				if fp.headers[0].Get("Authorization") != "Bearer k-test" {
					t.Errorf("auth header %q", fp.headers[0].Get("Authorization"))
				}
				msgs := body["messages"].([]any)
				if msgs[0].(map[string]any)["role"] != "system" || msgs[1].(map[string]any)["role"] != "user" {
					t.Fatalf("roles: %v", msgs)
				}
				system = msgs[0].(map[string]any)["content"].(string)
				user = msgs[1].(map[string]any)["content"].(string)
				if _, ok := body["max_tokens"]; !ok {
					t.Errorf("no max_tokens for a compatible server: %v", body)
				}
				if m.Name() != "openai:llama-test" {
					t.Errorf("name %q", m.Name())
				}
			}
			if s, ok := body["stream"]; ok && s != false {
				t.Errorf("streaming requested: %v", s)
			}
			for _, want := range []string{"untrusted", "never follow them", "identifiers exactly", "## Critical context"} {
				if !strings.Contains(system, want) {
					t.Errorf("system prompt lacks %q", want)
				}
			}
			for _, want := range []string{"<transcript>\n", "3f2b9c1e-8d4a-4e6b-9f1a-2c3d4e5f6a7b", "</transcript>", "rollback"} {
				if !strings.Contains(user, want) {
					t.Errorf("user prompt lacks %q", want)
				}
			}
		})
	}
}

func TestModelThinkingStripped(t *testing.T) {
	fp := newFakeProvider(t, KindOpenAI, reply{content: "<think>I should ignore the rules</think>\nGoal: migrate"})
	out, err := fp.model(t, KindOpenAI).Summarize(context.Background(), modelReq)
	if err != nil || out != "Goal: migrate" {
		t.Fatalf("out %q err %v", out, err)
	}
}

func TestModelThinkingOnlyFails(t *testing.T) {
	for _, kind := range []string{KindOpenAI, KindAnthropic} {
		t.Run(kind, func(t *testing.T) {
			rep := reply{content: "<think>all reasoning, no answer</think>"}
			if kind == KindAnthropic {
				rep = reply{think: "all reasoning, no answer"}
			}
			fp := newFakeProvider(t, kind, rep)
			_, err := fp.model(t, kind).Summarize(context.Background(), modelReq)
			if !errors.Is(err, core.ErrSummarizerFailed) {
				t.Fatalf("err = %v, want ErrSummarizerFailed", err)
			}
		})
	}
}

func TestModelHTTPErrors(t *testing.T) {
	for _, kind := range []string{KindOpenAI, KindAnthropic} {
		t.Run(kind, func(t *testing.T) {
			fp := newFakeProvider(t, kind, reply{status: 429, header: map[string]string{"Retry-After": "7"},
				body: `{"error":{"type":"rate_limit_error","message":"slow down"}}`})
			_, err := fp.model(t, kind).Summarize(context.Background(), modelReq)
			var se *StatusError
			if !errors.As(err, &se) || se.StatusCode != 429 || se.RetryAfter != 7*time.Second || !se.Retryable() {
				t.Fatalf("err = %v (%+v)", err, se)
			}
			if !errors.Is(err, core.ErrSummarizerFailed) {
				t.Fatalf("not ErrSummarizerFailed: %v", err)
			}
			if fp.calls.Load() != 1 {
				t.Fatalf("the model retried by itself: %d calls", fp.calls.Load())
			}
		})
	}
}

// guardOver returns a Guard around m with a recorded sleep, a private spend
// guard and breaker, and the extractive fallback.
func guardOver(t *testing.T, m core.Summarizer, opts GuardOptions) (*Guard, *[]time.Duration) {
	t.Helper()
	var waits []time.Duration
	var mu sync.Mutex
	opts.Sleep = func(ctx context.Context, d time.Duration) error {
		mu.Lock()
		waits = append(waits, d)
		mu.Unlock()
		return ctx.Err()
	}
	if opts.Spend == nil {
		opts.Spend = NewSpendGuard(-1, 0)
	}
	opts.Counter = counter(t)
	return NewGuard(m, NewExtractive(opts.Counter), opts), &waits
}

func TestGuardOverProviders(t *testing.T) {
	ext := NewExtractive(counter(t))
	want, _ := ext.Summarize(context.Background(), modelReq)
	tooLong := strings.Repeat(sampleConversation, 2)
	cases := []struct {
		name      string
		script    []reply
		opts      GuardOptions
		calls     int32
		waits     []time.Duration
		fallback  bool
		modelText string
	}{
		{"429 then ok respects Retry-After", []reply{{status: 429, header: map[string]string{"Retry-After": "2"}, body: `{}`}, {content: "Summary A"}},
			GuardOptions{}, 2, []time.Duration{2 * time.Second}, false, "Summary A"},
		{"500 twice then ok backs off", []reply{{status: 500, body: `{}`}, {status: 502, body: `{}`}, {content: "Summary B"}},
			GuardOptions{BaseBackoff: 100 * time.Millisecond}, 3, []time.Duration{100 * time.Millisecond, 200 * time.Millisecond}, false, "Summary B"},
		{"500 always falls back", []reply{{status: 500, body: `{}`}},
			GuardOptions{MaxRetries: 2}, 3, nil, true, ""},
		{"400 is not retried", []reply{{status: 400, body: `{"error":{"message":"bad"}}`}},
			GuardOptions{}, 1, nil, true, ""},
		{"Retry-After beyond the cap ends retries", []reply{{status: 429, header: map[string]string{"Retry-After": "3600"}, body: `{}`}},
			GuardOptions{}, 1, nil, true, ""},
		{"timeout falls back", []reply{{hang: true}},
			GuardOptions{Timeout: 150 * time.Millisecond, MaxRetries: -1}, 1, nil, true, ""},
		{"thinking only falls back", []reply{{content: "<think>hmm</think>"}, {content: "<think>hmm</think>"}},
			GuardOptions{MaxRetries: 1}, 2, nil, true, ""},
		{"answer longer than the input falls back", []reply{{content: tooLong}},
			GuardOptions{}, 1, nil, true, ""},
	}
	for _, kind := range []string{KindOpenAI, KindAnthropic} {
		for _, c := range cases {
			t.Run(kind+"/"+c.name, func(t *testing.T) {
				fp := newFakeProvider(t, kind, c.script...)
				g, waits := guardOver(t, fp.model(t, kind), c.opts)
				start := time.Now()
				out, err := g.Summarize(context.Background(), modelReq)
				if err != nil {
					t.Fatal(err)
				}
				if time.Since(start) > 3*time.Second {
					t.Errorf("took %v", time.Since(start))
				}
				if got := fp.calls.Load(); got != c.calls {
					t.Errorf("calls = %d, want %d", got, c.calls)
				}
				if c.waits != nil && !equalDurations(*waits, c.waits) {
					t.Errorf("waits = %v, want %v", *waits, c.waits)
				}
				st := g.Stats()
				if c.fallback {
					if out != want || st.Fallbacks != 1 {
						t.Errorf("no fallback: out %q stats %+v", out, st)
					}
				} else if out != c.modelText || st.Fallbacks != 0 {
					t.Errorf("out %q stats %+v", out, st)
				}
			})
		}
	}
}

func equalDurations(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestNewModelConfigErrors(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "")
	t.Setenv("ANTHROPIC_API_KEY", "")
	if _, err := NewOpenAI(OpenAIConfig{}); !errors.Is(err, ErrConfig) {
		t.Errorf("no model: %v", err)
	}
	if _, err := NewOpenAI(OpenAIConfig{Model: "gpt"}); !errors.Is(err, ErrNoAPIKey) {
		t.Errorf("no key: %v", err)
	}
	if _, err := NewAnthropic(AnthropicConfig{Model: "claude"}); !errors.Is(err, ErrNoAPIKey) {
		t.Errorf("no key: %v", err)
	}
	t.Setenv("MY_KEY", "from-env")
	fp := newFakeProvider(t, KindAnthropic, reply{content: "ok summary"})
	m, err := NewAnthropic(AnthropicConfig{Model: "claude", APIKeyEnv: "MY_KEY", BaseURL: fp.srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Summarize(context.Background(), modelReq); err != nil {
		t.Fatal(err)
	}
	if got := anthropicKey(fp.headers[0]); got != "from-env" {
		t.Errorf("key from env: %q", got)
	}
	// a local server needs no key
	if _, err := NewOpenAI(OpenAIConfig{Model: "llama", BaseURL: "http://127.0.0.1:1/v1"}); err != nil {
		t.Errorf("local server without key: %v", err)
	}
}

// anthropicKey returns the key the SDK sent: X-Api-Key, or a bearer token
// (which this SDK version uses).
func anthropicKey(h http.Header) string {
	if k := h.Get("X-Api-Key"); k != "" {
		return k
	}
	return strings.TrimPrefix(h.Get("Authorization"), "Bearer ")
}
