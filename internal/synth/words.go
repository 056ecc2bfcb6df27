package synth

// Vocabulary of the generator. Changing any list changes every seed's output.

var projectNames = []string{"ledger", "atlas", "harbor", "quill", "meridian", "sprocket"}

var models = [][3]string{
	{"anthropic-messages", "anthropic", "claude-sonnet-4-5"},
	{"anthropic-messages", "anthropic", "claude-opus-4-5"},
	{"openai-responses", "openai", "gpt-5.1-codex"},
}

var dirs = []string{"internal", "pkg", "cmd", "packages/core/src", "packages/tui/src", "services", "lib", "scripts"}

var pkgNames = []string{"store", "auth", "billing", "router", "cache", "queue", "render", "config",
	"session", "metrics", "worker", "gateway", "index", "search", "theme", "editor"}

var exts = []string{".go", ".go", ".ts", ".ts", ".tsx", ".md", ".json", ".yaml", ".sql", ".py"}

var goTypes = []string{"string", "int", "[]byte", "*Config", "map[string]int", "error", "time.Duration", "[]Item"}

var symbolSuffixes = []string{"", "Handler", "Store", "Options", "Request", "Batch", "Index", "State", "Error"}

var levels = []string{"info", "warn", "error", "debug"}

var people = []string{"Alice", "Bob", "Chen", "Dana", "Emeka", "Farah", "Goran", "Hiro"}

var words = []string{
	"account", "adapter", "apply", "batch", "bucket", "buffer", "build", "cache", "channel", "check",
	"client", "commit", "config", "cursor", "deadline", "decode", "delta", "digest", "entry", "event",
	"fetch", "field", "filter", "flush", "frame", "graph", "handle", "header", "index", "input",
	"ledger", "limit", "load", "lock", "merge", "meta", "node", "offset", "order", "output",
	"page", "parse", "patch", "peer", "plan", "pool", "queue", "range", "record", "reply",
	"route", "scan", "schema", "scope", "segment", "shard", "signal", "slice", "snapshot", "socket",
	"source", "state", "stream", "table", "task", "token", "trace", "tree", "update", "value",
	"vector", "version", "view", "watch", "window", "worker", "write", "retry", "timeout", "quota",
}

var verbs = []string{"Updated", "Moved", "Renamed", "Added a test for", "Fixed the bug in", "Removed dead code from",
	"Split", "Documented", "Refactored", "Checked"}

var shortUser = []string{"/mode", "continue", "ok do it", "yes", "looks good, commit it", "no, revert that",
	"run the tests again", "/compact", "why?", "try again but keep the public API", "wait",
	"what's left?", "ship it"}

var requestTemplates = []string{
	"read %s in full and explain how %s is wired up.",
	"there is a race in %s around %s, can you find it and fix it?",
	"refactor %s so that %s no longer depends on the global config.",
	"add tests for %s, especially the %s edge cases.",
	"the build fails in %s after my change to %s. fix it without touching the API.",
	"port %s to the new %s interface we discussed.",
	"why does %s allocate so much in %s? profile it and propose a fix.",
	"write docs for %s, with an example of %s.",
}

var intentTemplates = []string{
	"Let me look at %s first to see how %s is used.",
	"I'll check %s and then search for %s.",
	"Now I'll update %s so %s handles the error path.",
	"Running the tests for %s after the %s change.",
}

var answerTemplates = []string{
	"Done. The change in %s keeps %s backwards compatible:",
	"I found the problem: %s calls %s before the lock is taken. Summary:",
	"Here is the plan for %s (%s stays as is):",
	"Tests pass. What changed in %s around %s:",
}

var errorTexts = []string{"undefined: cfg", "cannot use x (variable of type int) as string value",
	"connection refused", "context deadline exceeded", "permission denied", "no such file or directory",
	"unexpected EOF", "index out of range [3] with length 3", "duplicate key value violates unique constraint",
	"TypeError: Cannot read properties of undefined (reading 'length')"}

var cjkSentences = []string{
	"请帮我看一下这个函数为什么会内存泄漏。",
	"测试在本地能通过，但是在持续集成里失败了。",
	"把配置文件里的超时时间改成三十秒。",
	"这个接口的返回值需要保持向后兼容。",
	"数据库迁移脚本要先在测试环境运行。",
	"このテストが時々失敗する原因を調べてください。",
	"ログの出力をもう少し簡潔にしたいです。",
	"キャッシュの有効期限は五分にしてください。",
	"변경 사항을 커밋하기 전에 테스트를 실행해 주세요.",
	"用户反馈说搜索结果不准确，特别是中文关键词。",
}
