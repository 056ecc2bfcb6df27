package store

// Role returns the role held in b as a string, without allocating for the
// roles of package core (a scan of a window decodes one per context
// item).
func Role(b []byte) string {
	switch string(b) { // no allocation for the comparisons
	case "":
		return ""
	case "user":
		return "user"
	case "assistant":
		return "assistant"
	case "toolResult":
		return "toolResult"
	case "bashExecution":
		return "bashExecution"
	case "custom":
		return "custom"
	case "branchSummary":
		return "branchSummary"
	case "compactionSummary":
		return "compactionSummary"
	}
	return string(b)
}
