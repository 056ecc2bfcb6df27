package lossless

import (
	"strings"

	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/summarize"
)

// modelSummary is what a host model that does its job answers to a
// summary request (summarize's prompts): a line opening with tag, then what
// the transcript was about, naming its identifiers (the summary check,
// summarize.CheckSummary, refuses an answer without them).
func modelSummary(req core.LLMRequest, tag string) string {
	user := ""
	if len(req.Messages) > 0 {
		user = req.Messages[0].Text()
	}
	if i := strings.Index(user, "<transcript>"); i >= 0 {
		user = user[i:]
	}
	var ids []string
	for _, id := range summarize.SourceIdentifiers(user) {
		if len(ids) == 24 {
			break
		}
		ids = append(ids, id.Value)
	}
	return tag + ": the user asked the agent to read files one turn after the other, and the agent read them. " +
		"Files read: " + strings.Join(ids, ", ") + ". Next: read the next file when asked."
}
