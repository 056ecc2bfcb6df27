package bridge

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/lossless-engine/contextengine/core"
)

// BenchmarkRoundTrip measures one request → response over pipes (encode,
// decode, dispatch, engine call, write), for assemble results of 1, 100 and
// 1000 messages (~0.5 KB each) and for a single ingest. MB/s counts the
// request and response bytes.
func BenchmarkRoundTrip(b *testing.B) {
	msg := `{"role":"assistant","content":[{"type":"text","text":"` + strings.Repeat("lorem ipsum ", 40) + `"}],"stopReason":"stop","timestamp":1}`
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("assemble/messages=%d", n), func(b *testing.B) {
			f := newFake()
			for i := 0; i < n; i++ {
				m := core.MustParseMessage(strings.Replace(msg, `"timestamp":1`, fmt.Sprintf(`"timestamp":%d`, i), 1))
				f.Ingest(context.Background(), core.IngestParams{SessionID: "s", Message: m})
			}
			line := `{"jsonrpc":"2.0","id":7,"method":"assemble","params":{"sessionId":"s","messages":[],"tokenBudget":100000}}` + "\n"
			benchLoop(b, f, line)
		})
	}
	b.Run("ingest", func(b *testing.B) {
		f := newFake()
		line := `{"jsonrpc":"2.0","id":7,"method":"ingest","params":{"sessionId":"s","message":` + msg + `}}` + "\n"
		benchLoop(b, f, line)
	})
}

func benchLoop(b *testing.B, e core.Engine, line string) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Serve(context.Background(), inR, outW, Static(e), Options{KeepEngineOpen: true}) }()
	rd := bufio.NewReaderSize(outR, 1<<20)
	io.WriteString(inW, `{"jsonrpc":"2.0","id":0,"method":"initialize"}`+"\n")
	if _, err := rd.ReadBytes('\n'); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := io.WriteString(inW, line); err != nil {
			b.Fatal(err)
		}
		resp, err := rd.ReadBytes('\n')
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			b.SetBytes(int64(len(line) + len(resp))) // bytes through the bridge per call
		}
		if strings.Contains(string(resp[:min(len(resp), 64)]), `"error"`) {
			b.Fatalf("error response: %.200s", resp)
		}
	}
	b.StopTimer()
	inW.Close()
	go io.Copy(io.Discard, outR)
	<-done
}
