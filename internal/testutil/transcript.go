package testutil

import "fmt"

// PipelineTranscript is a session transcript (JSONL lines) with
// everything an import must keep in order: a header, empty lines,
// malformed lines (bad JSON, an unknown role — accepted and stored,
// invalid UTF-8, a message entry without a message), entries of other
// types with and without ids, a repeated message, two compaction entries
// (by id and by index) and a torn last line (torn, without its line
// break). The import tests of packages lossless and lossless/transcript
// read it.
func PipelineTranscript() (lines [][]byte, torn []byte) {
	add := func(s string) { lines = append(lines, []byte(s)) }
	add(`{"type":"session","version":4,"id":"pipe-1","timestamp":"2026-01-01T00:00:00Z"}`)
	msg := func(id string, i int, role string) {
		add(fmt.Sprintf(`{"type":"message","id":%q,"parentId":null,"timestamp":"2026-01-01T00:00:%02dZ","message":{"role":%q,"content":[{"type":"text","text":"message number %d about the pipeline"}],"timestamp":%d}}`,
			id, i%60, role, i, 1000+i))
	}
	for i := 0; i < 12; i++ {
		msg(fmt.Sprintf("m%d", i), i, []string{"user", "assistant"}[i%2])
	}
	add(``)
	add(`{"type":"message","id":"bad1","message":{not json}}`)
	add(`{"type":"model_change","id":"mc1","provider":"x","modelId":"y"}`)
	add(`{"type":"message","id":"bad2","message":{"role":"wizard","content":"x"}}`)
	add("{\"type\":\"message\",\"id\":\"bad3\",\"message\":{\"role\":\"user\",\"content\":\"\xff\"}}")
	add(`{"type":"message","id":"bad4"}`)
	add(`   `)
	add(`{"type":"compaction","id":"c1","timestamp":"2026-01-01T00:01:00Z","summary":"first part","firstKeptEntryId":"m8","tokensBefore":100}`)
	for i := 12; i < 20; i++ {
		msg(fmt.Sprintf("m%d", i), i, []string{"user", "assistant"}[i%2])
	}
	add(`{"type":"custom","customType":"note","data":{"a":1}}`)
	add(string(lines[3])) // a repeated message line (m2): stored once
	add("{\"type\":\"message\",\"id\":\"sp\",\"message\": {\"role\": \"user\", \"content\": \"spaced out\"}}\r")
	add(`{"type":"compaction","id":"c2","timestamp":"2026-01-01T00:02:00Z","summary":"second part","firstKeptEntryIndex":24}`)
	for i := 20; i < 26; i++ {
		msg(fmt.Sprintf("m%d", i), i, []string{"user", "assistant"}[i%2])
	}
	add(`{"type":"label","id":"l1","targetId":"m3","label":"x"}`)
	add(`["not","an","object"]`)
	torn = []byte(`{"type":"message","id":"m26","message":{"role":"user","content":"tor`)
	return lines, torn
}
