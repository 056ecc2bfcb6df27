package synth

import (
	"bufio"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"
)

// SessionInfo describes a session file written by WriteSession.
type SessionInfo struct {
	// ID is the session id in the header.
	ID string
	// Messages is the number of message entries (the first Messages of the
	// seed's stream, in order).
	Messages int
	// Entries is the number of entries after the header (messages plus
	// model_change and thinking_level_change entries).
	Entries int
	// Bytes is the file size, and MessageBytes the sum of the messages'
	// JSON sizes.
	Bytes        int64
	MessageBytes int64
}

// WriteSession writes an OpenClaw session transcript (version 4 header, then
// one entry a line with id and parentId) holding the first n messages of
// seed's stream, embedded byte for byte, with a model_change or
// thinking_level_change entry now and then.
func WriteSession(w io.Writer, seed uint64, n int) (SessionInfo, error) {
	g := New(seed)
	ids := rand.New(rand.NewPCG(seed^0x5eed, 42))
	hex := func(k int) string {
		const digits = "0123456789abcdef"
		b := make([]byte, k)
		for i := range b {
			b[i] = digits[ids.IntN(16)]
		}
		return string(b)
	}
	bw := bufio.NewWriterSize(w, 256<<10)
	cw := &countWriter{w: bw}
	u := hex(32)
	info := SessionInfo{ID: u[0:8] + "-" + u[8:12] + "-4" + u[13:16] + "-a" + u[17:20] + "-" + u[20:32]}
	fmt.Fprintf(cw, `{"type":"session","version":4,"id":%q,"timestamp":%q,"cwd":"/home/dev/src/%s"}`+"\n",
		info.ID, iso(baseTime-1000), g.project)
	parent := ""
	entry := func(body string) {
		id := hex(8)
		if parent == "" {
			fmt.Fprintf(cw, `{"type":%s,"id":%q,"parentId":null,"timestamp":%q`, body, id, iso(g.Timestamp()))
		} else {
			fmt.Fprintf(cw, `{"type":%s,"id":%q,"parentId":%q,"timestamp":%q`, body, id, parent, iso(g.Timestamp()))
		}
		parent = id
		info.Entries++
	}
	for i := 0; i < n; i++ {
		if ids.IntN(60) == 0 {
			if ids.IntN(2) == 0 {
				entry(`"thinking_level_change"`)
				fmt.Fprintf(cw, `,"thinkingLevel":%q}`+"\n", []string{"off", "low", "medium", "high"}[ids.IntN(4)])
			} else {
				m := models[ids.IntN(len(models))]
				entry(`"model_change"`)
				fmt.Fprintf(cw, `,"provider":%q,"modelId":%q}`+"\n", m[1], m[2])
			}
		}
		msg := g.Next()
		entry(`"message"`)
		io.WriteString(cw, `,"message":`)
		cw.Write(msg)
		io.WriteString(cw, "}\n")
		info.Messages++
		info.MessageBytes += int64(len(msg))
	}
	if cw.err != nil {
		return info, fmt.Errorf("synth: write session: %w", cw.err)
	}
	if err := bw.Flush(); err != nil {
		return info, fmt.Errorf("synth: write session: %w", err)
	}
	info.Bytes = cw.n
	return info, nil
}

// WriteSessionFile writes WriteSession's output to a new file at path.
func WriteSessionFile(path string, seed uint64, n int) (SessionInfo, error) {
	f, err := os.Create(path)
	if err != nil {
		return SessionInfo{}, fmt.Errorf("synth: %w", err)
	}
	info, err := WriteSession(f, seed, n)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("synth: close session: %w", cerr)
	}
	return info, err
}

func iso(ms int64) string { return time.UnixMilli(ms).UTC().Format("2006-01-02T15:04:05.000Z") }

type countWriter struct {
	w   io.Writer
	n   int64
	err error
}

func (c *countWriter) Write(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.w.Write(p)
	c.n += int64(n)
	c.err = err
	return n, err
}
