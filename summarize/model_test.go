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
	times   []time.Time // when each request arrived
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
		fp.times = append(fp.times, time.Now())
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

// model returns a client of fp with the default retries and a 10 s
// request timeout.
func (fp *fakeProvider) model(t *testing.T, kind string) *Model {
	return fp.modelWith(t, kind, 0, 10*time.Second)
}

// modelWith returns a client of fp with these MaxRetries and Timeout.
func (fp *fakeProvider) modelWith(t *testing.T, kind string, retries int, timeout time.Duration) *Model {
	t.Helper()
	var m *Model
	var err error
	if kind == KindAnthropic {
		m, err = NewAnthropic(AnthropicConfig{Model: "claude-test", BaseURL: fp.srv.URL, APIKey: "k-test", Timeout: timeout, MaxRetries: retries})
	} else {
		m, err = NewOpenAI(OpenAIConfig{Model: "llama-test", BaseURL: fp.srv.URL + "/v1", APIKey: "k-test", Timeout: timeout, MaxRetries: retries})
	}
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// requests returns how many requests fp received and the gaps between them.
func (fp *fakeProvider) requests() (int, []time.Duration) {
	fp.mu.Lock()
	defer fp.mu.Unlock()
	var gaps []time.Duration
	for i := 1; i < len(fp.times); i++ {
		gaps = append(gaps, fp.times[i].Sub(fp.times[i-1]))
	}
	return len(fp.times), gaps
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
			_, err := fp.modelWith(t, kind, -1, 10*time.Second).Summarize(context.Background(), modelReq)
			var se *StatusError
			if !errors.As(err, &se) || se.StatusCode != 429 || se.RetryAfter != 7*time.Second || !se.Retryable() {
				t.Fatalf("err = %v (%+v)", err, se)
			}
			if !errors.Is(err, core.ErrSummarizerFailed) {
				t.Fatalf("not ErrSummarizerFailed: %v", err)
			}
			if fp.calls.Load() != 1 {
				t.Fatalf("MaxRetries -1 retried: %d requests", fp.calls.Load())
			}
		})
	}
}

// TestModelRetriesBySDK: without a Guard, the SDK retries by itself and
// waits as retry-after-ms asks.
func TestModelRetriesBySDK(t *testing.T) {
	for _, kind := range []string{KindOpenAI, KindAnthropic} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			fp := newFakeProvider(t, kind, reply{status: 503, header: map[string]string{"Retry-After-Ms": "300"}, body: `{}`},
				reply{content: "Summary A"})
			out, err := fp.model(t, kind).Summarize(context.Background(), modelReq)
			n, gaps := fp.requests()
			if err != nil || out != "Summary A" || n != 2 {
				t.Fatalf("out %q err %v, %d requests", out, err, n)
			}
			if gaps[0] < 250*time.Millisecond || gaps[0] > 2*time.Second {
				t.Fatalf("retried after %v, want about 300ms", gaps[0])
			}
		})
	}
}

// guardOver returns a Guard around m with a private spend guard (unlimited
// unless opts sets one) and breaker, and the extractive fallback.
func guardOver(t *testing.T, m core.Summarizer, opts GuardOptions) *Guard {
	t.Helper()
	if opts.Spend == nil {
		opts.Spend = NewSpendGuard(-1, 0)
	}
	opts.Counter = counter(t)
	return NewGuard(m, NewExtractive(opts.Counter), opts)
}

// TestGuardOverProviders runs a Guard over each provider's SDK client
// against a server speaking its wire format: the SDK does the retries and
// the waits, the Guard makes one call per request.
func TestGuardOverProviders(t *testing.T) {
	ext := NewExtractive(counter(t))
	want, _ := ext.Summarize(context.Background(), modelReq)
	tooLong := strings.Repeat(sampleConversation, 2)
	always500 := reply{status: 500, body: `{"error":{"type":"api_error","message":"boom"}}`}
	cases := []struct {
		name      string
		script    []reply
		retries   int           // the client's MaxRetries (0: the default, 2)
		timeout   time.Duration // the client's per-request timeout (0: 10 s)
		requests  map[string]int
		minGaps   []time.Duration // the SDK waited at least this long before each retry
		maxGap    time.Duration   // and no longer than this
		calls     int             // calls of the model the Guard makes (0: 1)
		fallback  map[string]bool
		modelText string
	}{
		{name: "429 with Retry-After 1 is retried after about 1s",
			script:   []reply{{status: 429, header: map[string]string{"Retry-After": "1"}, body: `{}`}, {content: goodSummary}},
			requests: both(2), minGaps: []time.Duration{900 * time.Millisecond}, maxGap: 3 * time.Second, modelText: goodSummary},
		{name: "MaxRetries -1 sends one request", script: []reply{always500}, retries: -1,
			requests: both(1), fallback: bothTrue()},
		{name: "500 is retried MaxRetries times with backoff then falls back", script: []reply{always500}, retries: 2,
			// the SDKs back off 0.5s then 1s, less up to a quarter of jitter
			requests: both(3), minGaps: []time.Duration{350 * time.Millisecond, 700 * time.Millisecond}, maxGap: 3 * time.Second,
			fallback: bothTrue()},
		{name: "400 is not retried", script: []reply{{status: 400, body: `{"error":{"message":"bad"}}`}},
			requests: both(1), fallback: bothTrue()},
		{name: "Retry-After beyond the cap ends retries", script: []reply{{status: 429, header: map[string]string{"Retry-After": "3600"}, body: `{}`}},
			requests: both(1), fallback: bothTrue()},
		{name: "timeout falls back", script: []reply{{hang: true}}, retries: -1, timeout: 150 * time.Millisecond,
			requests: both(1), fallback: bothTrue()},
		// The SDKs differ here: Anthropic's retries an attempt that timed
		// out, OpenAI's returns its deadline error.
		{name: "an attempt that timed out", script: []reply{{hang: true}, {content: goodSummary}}, retries: 1, timeout: 150 * time.Millisecond,
			requests: map[string]int{KindOpenAI: 1, KindAnthropic: 2}, fallback: map[string]bool{KindOpenAI: true}, modelText: goodSummary},
		// An answer that is no summary is asked for once more, with the
		// stricter prompt (one more call, not an SDK retry).
		{name: "thinking only is refused, asked again, then falls back", script: []reply{{content: "<think>hmm</think>"}},
			requests: both(2), calls: 2, fallback: bothTrue()},
		{name: "answer longer than the input is refused, asked again, then falls back", script: []reply{{content: tooLong}},
			requests: both(2), calls: 2, fallback: bothTrue()},
		{name: "a canned reply is refused, and the stricter retry's summary taken", script: []reply{{content: "Noted. That should not change the schedule much."}, {content: goodSummary}},
			requests: both(2), calls: 2, modelText: goodSummary},
	}
	for _, kind := range []string{KindOpenAI, KindAnthropic} {
		for _, c := range cases {
			t.Run(kind+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				fp := newFakeProvider(t, kind, c.script...)
				timeout := c.timeout
				if timeout == 0 {
					timeout = 10 * time.Second
				}
				g := guardOver(t, fp.modelWith(t, kind, c.retries, timeout), GuardOptions{})
				start := time.Now()
				out, err := g.Summarize(context.Background(), modelReq)
				if err != nil {
					t.Fatal(err)
				}
				if time.Since(start) > 5*time.Second {
					t.Errorf("took %v", time.Since(start))
				}
				n, gaps := fp.requests()
				if n != c.requests[kind] {
					t.Errorf("requests = %d, want %d", n, c.requests[kind])
				}
				for i, min := range c.minGaps {
					if i < len(gaps) && (gaps[i] < min || gaps[i] > c.maxGap) {
						t.Errorf("wait before retry %d = %v, want %v..%v", i+1, gaps[i], min, c.maxGap)
					}
				}
				st := g.Stats()
				if calls := max(c.calls, 1); st.Calls != calls || st.Retries != n-calls {
					t.Errorf("%d call(s) with %d retries expected: %+v", calls, n-calls, st)
				}
				if c.fallback[kind] {
					if out != want || st.Fallbacks != 1 || st.Failures != 1 {
						t.Errorf("no fallback: out %q stats %+v", out, st)
					}
				} else if out != c.modelText || st.Fallbacks != 0 || st.Failures != 0 {
					t.Errorf("out %q stats %+v", out, st)
				}
			})
		}
	}
}

func both(n int) map[string]int { return map[string]int{KindOpenAI: n, KindAnthropic: n} }
func bothTrue() map[string]bool { return map[string]bool{KindOpenAI: true, KindAnthropic: true} }

// fast500 is a 500 whose retry-after-ms makes the SDK's retries quick.
var fast500 = reply{status: 500, header: map[string]string{"Retry-After-Ms": "5"}, body: `{"error":{"type":"api_error","message":"boom"}}`}

// TestGuardBreakerOverSDKRetries: a call that failed after the SDK's
// retries counts once toward the breaker, which opens after N such calls.
func TestGuardBreakerOverSDKRetries(t *testing.T) {
	for _, kind := range []string{KindOpenAI, KindAnthropic} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			fp := newFakeProvider(t, kind, fast500)
			g := guardOver(t, fp.modelWith(t, kind, 1, 10*time.Second), GuardOptions{BreakerFailures: 2})
			for i := 0; i < 2; i++ {
				if out, err := g.Summarize(context.Background(), modelReq); err != nil || out == "" {
					t.Fatalf("call %d: %q %v", i, out, err)
				}
				if i == 0 && g.Breaker().State() != BreakerClosed {
					t.Fatalf("breaker opened after one call (%d requests)", fp.calls.Load())
				}
			}
			if g.Breaker().State() != BreakerOpen || fp.calls.Load() != 4 {
				t.Fatalf("after 2 failed calls: breaker %s, %d requests", g.Breaker().State(), fp.calls.Load())
			}
			g.Summarize(context.Background(), modelReq)
			if fp.calls.Load() != 4 {
				t.Fatalf("open breaker let a request through")
			}
			if st := g.Stats(); st.Calls != 2 || st.Retries != 2 || st.Failures != 2 || st.Skipped != 1 || st.Fallbacks != 3 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// TestGuardSpendCountsSDKRetries: each of the SDK's requests is charged to
// the spend guard; a retry it refuses ends the call.
func TestGuardSpendCountsSDKRetries(t *testing.T) {
	for _, kind := range []string{KindOpenAI, KindAnthropic} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			fp := newFakeProvider(t, kind, fast500)
			spend := NewSpendGuard(3, time.Minute)
			g := NewGuard(fp.modelWith(t, kind, 5, 10*time.Second), nil, GuardOptions{Spend: spend, Counter: core.Chars4{}})
			start := time.Now()
			_, err := g.Summarize(context.Background(), modelReq)
			if !errors.Is(err, ErrSpendLimit) || !errors.Is(err, core.ErrSummarizerFailed) {
				t.Fatalf("err = %v, want the spend limit", err)
			}
			if time.Since(start) > 3*time.Second {
				t.Fatalf("the refused retry took %v to end the call", time.Since(start))
			}
			if fp.calls.Load() != 3 {
				t.Fatalf("%d requests within a budget of 3", fp.calls.Load())
			}
			if _, err := g.Summarize(context.Background(), modelReq); !errors.Is(err, ErrSpendLimit) || fp.calls.Load() != 3 {
				t.Fatalf("over budget: %v, %d requests", err, fp.calls.Load())
			}
			if st := g.Stats(); st.Calls != 1 || st.Retries != 2 || st.Failures != 1 || st.Skipped != 1 {
				t.Fatalf("stats %+v", st)
			}
		})
	}
}

// TestGuardCancelDuringSDKWait: cancelling the caller's context while the
// SDK waits out a Retry-After returns the context's error at once; the
// fallback does not hide it and the breaker does not count it.
func TestGuardCancelDuringSDKWait(t *testing.T) {
	for _, kind := range []string{KindOpenAI, KindAnthropic} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			fp := newFakeProvider(t, kind, reply{status: 429, header: map[string]string{"Retry-After": "20"}, body: `{}`})
			g := guardOver(t, fp.model(t, kind), GuardOptions{BreakerFailures: 1})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				for fp.calls.Load() == 0 {
					time.Sleep(5 * time.Millisecond)
				}
				time.Sleep(100 * time.Millisecond) // the SDK is now waiting
				cancel()
			}()
			start := time.Now()
			_, err := g.Summarize(ctx, modelReq)
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err = %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Fatalf("returned %v after the start, want promptly after the cancel", d)
			}
			if fp.calls.Load() != 1 || g.Breaker().State() != BreakerClosed || g.Stats().Fallbacks != 0 {
				t.Fatalf("%d requests, breaker %s, stats %+v", fp.calls.Load(), g.Breaker().State(), g.Stats())
			}
		})
	}
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

// systemPromptOf returns the system prompt of a request body fp received.
func systemPromptOf(kind string, body map[string]any) string {
	if kind == KindAnthropic {
		return body["system"].([]any)[0].(map[string]any)["text"].(string)
	}
	return body["messages"].([]any)[0].(map[string]any)["content"].(string)
}

// TestGuardRefusesCannedReplies: a model that answers summary requests
// with canned replies (the real wire formats, through the SDKs) is asked
// once more with a stricter prompt that says what was wrong, then the
// extractive summarizer answers; the Guard counts it, the compaction's
// Tally and the call's SummarizeReport say so.
func TestGuardRefusesCannedReplies(t *testing.T) {
	ext := NewExtractive(counter(t))
	want, _ := ext.Summarize(context.Background(), modelReq)
	for _, kind := range []string{KindOpenAI, KindAnthropic} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			fp := newFakeProvider(t, kind, reply{content: "Noted. That should not change the schedule much."},
				reply{content: "OK, got it."})
			g := guardOver(t, fp.model(t, kind), GuardOptions{})
			tally := &Tally{}
			var rep core.SummarizeReport
			ctx := core.WithSummarizeReport(WithTally(context.Background(), tally), &rep)
			out, err := g.Summarize(ctx, modelReq)
			if err != nil || out != want {
				t.Fatalf("out %q err %v, want the extractive summary", out, err)
			}
			if n := fp.calls.Load(); n != 2 {
				t.Fatalf("%d requests, want the first and one stricter retry", n)
			}
			first, second := systemPromptOf(kind, fp.bodies[0]), systemPromptOf(kind, fp.bodies[1])
			if strings.Contains(first, "refused") {
				t.Errorf("the first prompt speaks of a refusal:\n%s", first)
			}
			for _, w := range []string{"Your previous answer to this request was refused", "too short to summarize",
				"Noted. That should not change the schedule much.", "never a reply to the conversation"} {
				if !strings.Contains(second, w) {
					t.Errorf("the stricter prompt lacks %q:\n%s", w, second)
				}
			}
			st := g.Stats()
			if st.Calls != 2 || st.Refused != 2 || st.RefusedFallbacks != 1 || st.Fallbacks != 1 || st.Failures != 1 {
				t.Errorf("stats %+v", st)
			}
			if c := tally.Counts(); c.Fallback != 1 || c.Refused != 1 || c.Model != 0 || !strings.Contains(c.Reason, "summary refused") {
				t.Errorf("tally %+v", c)
			}
			if rep.By != KindExtractive || !strings.Contains(rep.Refused, `"OK, got it."`) {
				t.Errorf("report %+v, want the second answer's refusal and the extractive summarizer", rep)
			}
			if g.Breaker().State() != BreakerClosed {
				t.Errorf("breaker %s after one refused request", g.Breaker().State())
			}
		})
	}
}
