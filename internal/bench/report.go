package bench

import "github.com/lossless-engine/contextengine/internal/locomo"

// Report holds every figure of a run; it encodes to the JSON written by
// lossless-bench --json, with one key per suite that ran.
type Report struct {
	Meta      Meta             `json:"meta"`
	Ingest    *IngestReport    `json:"ingest,omitempty"`
	Assemble  *AssembleReport  `json:"assemble,omitempty"`
	Compact   *CompactReport   `json:"compact,omitempty"`
	Recall    *RecallReport    `json:"recall,omitempty"`
	Lossless  *LosslessReport  `json:"lossless,omitempty"`
	Footprint *FootprintReport `json:"footprint,omitempty"`
	Sessions  *SessionsReport  `json:"sessions,omitempty"`
	Soak      *SoakReport      `json:"soak,omitempty"`
	Window    *WindowReport    `json:"window,omitempty"`
	// Errors lists the suites that failed, as "suite: error".
	Errors []string `json:"errors,omitempty"`
}

// Meta describes the run and the machine.
type Meta struct {
	Date     string   `json:"date"`
	Go       string   `json:"go"`
	OS       string   `json:"os"`
	Cores    int      `json:"cores"`
	MemoryGB float64  `json:"memory_gb"`
	Command  string   `json:"command,omitempty"`
	Seed     uint64   `json:"seed"`
	Messages int      `json:"messages"`
	Sizes    []int    `json:"sizes"`
	Budget   int      `json:"budget"`
	Suites   []string `json:"suites"`
	Engine   string   `json:"engine"`
	Note     string   `json:"note,omitempty"`
	WallS    float64  `json:"wall_s"`
	// SuiteWallS is each suite's wall time in seconds.
	SuiteWallS map[string]float64 `json:"suite_wall_s"`
	// GOMAXPROCS is the Go scheduler's processors during the run, CPU the
	// processor's model name (Linux; empty elsewhere).
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPU        string `json:"cpu,omitempty"`
	// LoadStart and LoadEnd are the machine's load averages (1, 5 and 15
	// minutes) when the run started and when it ended (Linux; nil
	// elsewhere): figures of a loaded machine read so.
	LoadStart []float64 `json:"load_start,omitempty"`
	LoadEnd   []float64 `json:"load_end,omitempty"`
	// Commit is the source's commit (and "-dirty" when the tree had
	// changes), when the command could tell.
	Commit string `json:"commit,omitempty"`
}

// Rate is a throughput measurement.
type Rate struct {
	Messages   int     `json:"messages"`
	Bytes      int64   `json:"bytes"`
	Seconds    float64 `json:"seconds"`
	MsgsPerS   float64 `json:"msgs_per_s"`
	MBPerS     float64 `json:"mb_per_s"`
	NsPerMsg   float64 `json:"ns_per_msg"`
	AllocBytes uint64  `json:"alloc_bytes,omitempty"`
}

func newRate(msgs int, bytes int64, secs float64, alloc uint64) Rate {
	r := Rate{Messages: msgs, Bytes: bytes, Seconds: secs, AllocBytes: alloc}
	if secs > 0 {
		r.MsgsPerS = float64(msgs) / secs
		r.MBPerS = float64(bytes) / secs / 1e6
	}
	if msgs > 0 {
		r.NsPerMsg = secs * 1e9 / float64(msgs)
	}
	return r
}

// IngestReport is the ingest suite: the engine one message at a time, one
// turn at a time, and importing a session file, against raw Badger and raw
// Bleve on the same messages.
type IngestReport struct {
	OneByOne  Rate `json:"one_by_one"`
	Batched   Rate `json:"batched"`
	Bootstrap Rate `json:"bootstrap"`
	RawBadger Rate `json:"raw_badger_writebatch"`
	RawBleve  Rate `json:"raw_bleve_batch"`

	OneByOneMsgsPerS   float64 `json:"one_by_one_msgs_per_s"`
	BatchedMsgsPerS    float64 `json:"batched_msgs_per_s"`
	BatchedMBPerS      float64 `json:"batched_mb_per_s"`
	BootstrapMsgsPerS  float64 `json:"bootstrap_msgs_per_s"`
	BootstrapMBPerS    float64 `json:"bootstrap_mb_per_s"`
	RawBadgerMsgsPerS  float64 `json:"raw_badger_msgs_per_s"`
	RawBleveMsgsPerS   float64 `json:"raw_bleve_msgs_per_s"`
	BatchedOverBadger  float64 `json:"batched_over_raw_badger"`
	BatchedOverBleve   float64 `json:"batched_over_raw_bleve"`
	BootstrapOverBleve float64 `json:"bootstrap_over_raw_bleve"`
	// Transcripts are the bootstrap imports of the real transcripts given.
	Transcripts []TranscriptIngest `json:"transcripts,omitempty"`
	Error       string             `json:"error,omitempty"`
}

// TranscriptIngest is the import of one real transcript.
type TranscriptIngest struct {
	Path      string  `json:"path"`
	Messages  int     `json:"messages"`
	Imported  int     `json:"imported"`
	Bytes     int64   `json:"bytes"`
	Seconds   float64 `json:"seconds"`
	MsgsPerS  float64 `json:"msgs_per_s"`
	MBPerS    float64 `json:"mb_per_s"`
	Malformed int     `json:"malformed_lines"`
	Error     string  `json:"error,omitempty"`
}

// Latencies are p50 and p99 latencies in milliseconds per history size
// (AssembleReport's, and the backends comparison's of assemble and
// recall).
type Latencies struct {
	P50Ms map[string]float64 `json:"p50_ms"`
	P99Ms map[string]float64 `json:"p99_ms"`
}

// NewLatencies returns empty Latencies.
func NewLatencies() Latencies {
	return Latencies{P50Ms: map[string]float64{}, P99Ms: map[string]float64{}}
}

// Add records the p50 and p99 (nearest rank) of lat, in milliseconds, at
// size key.
func (l Latencies) Add(key string, lat []float64) {
	l.P50Ms[key], l.P99Ms[key] = percentile(lat, 50), percentile(lat, 99)
}

// AssembleReport is the assemble suite: latency at several history sizes.
// Maps are keyed by the history size in messages, as a decimal string.
type AssembleReport struct {
	Budget int `json:"budget"`
	Runs   int `json:"runs"`
	Latencies
	// Tokens is the assembled estimate at each size, Messages the number
	// of messages returned.
	Tokens   map[string]int `json:"tokens"`
	Messages map[string]int `json:"messages"`
	// Samples is the number of timed assembles at each size.
	Samples map[string]int `json:"samples"`
	// P99RatioLargestSmallest is p99 at the largest size / p99 at the
	// smallest: 1 means flat in history size.
	P99RatioLargestSmallest float64 `json:"p99_ratio_largest_smallest"`
	// Legacy's assemble on the same histories (sizes up to LegacyMaxSize),
	// counting with LegacyCounter (OpenClaw's chars/4 estimate, as OpenClaw
	// runs it).
	LegacyCounter string             `json:"legacy_counter,omitempty"`
	LegacyP50Ms   map[string]float64 `json:"legacy_p50_ms,omitempty"`
	LegacyP99Ms   map[string]float64 `json:"legacy_p99_ms,omitempty"`
	// LegacySamples is the number of timed legacy assembles at each size
	// (few when the counter is slow: legacy counts the whole history on
	// every call).
	LegacySamples map[string]int `json:"legacy_samples,omitempty"`
	// LegacyTokens is legacy's estimatedTokens at each size (the whole
	// history counted with LegacyCounter).
	LegacyTokens map[string]int `json:"legacy_tokens,omitempty"`
	// The same with the exact counter LegacyExactCounter (Config.LegacyExact).
	LegacyExactCounter string             `json:"legacy_exact_counter,omitempty"`
	LegacyExactP50Ms   map[string]float64 `json:"legacy_exact_p50_ms,omitempty"`
	LegacyExactP99Ms   map[string]float64 `json:"legacy_exact_p99_ms,omitempty"`
	LegacyExactSamples map[string]int     `json:"legacy_exact_samples,omitempty"`
	LegacyExactTokens  map[string]int     `json:"legacy_exact_tokens,omitempty"`
	// BuildMsgsPerS is the ingest rate while building the histories.
	BuildMsgsPerS float64 `json:"build_msgs_per_s"`
	Note          string  `json:"note,omitempty"`
	Error         string  `json:"error,omitempty"`
}

// CompactReport is the compact suite: bringing a long history under budget.
type CompactReport struct {
	Messages int     `json:"messages"`
	Budget   int     `json:"budget"`
	WallS    float64 `json:"wall_s"`
	// Rounds is the number of Compact calls, InternalRounds the rounds the
	// engine reported doing inside them (details.rounds), when it says.
	Rounds         int `json:"rounds"`
	InternalRounds int `json:"internal_rounds,omitempty"`
	// TokensBefore and TokensAfter are the whole stored context's tokens
	// (details.contextTokensBefore/After when the engine reports them,
	// else result.tokensBefore/After); WindowTokensBefore/After are the
	// result's own figures (what the model would be sent).
	TokensBefore       int  `json:"tokens_before"`
	TokensAfter        int  `json:"tokens_after"`
	WindowTokensBefore int  `json:"window_tokens_before"`
	WindowTokensAfter  int  `json:"window_tokens_after"`
	UnderBudget        bool `json:"under_budget"`
	// AssembledTokens is the assemble estimate after compaction.
	AssembledTokens int `json:"assembled_tokens"`
	// Identifiers is the number of distinct identifiers in the compacted
	// messages, IdentifierRetentionPct the share still present verbatim in
	// the assembled context.
	Identifiers            int     `json:"identifiers"`
	IdentifierRetentionPct float64 `json:"identifier_retention_pct"`
	// Legacy is the legacy engine's compaction of the same transcript
	// (Config.Legacy), LegacyExact the same with the exact counter
	// (Config.LegacyExact).
	Legacy      *LegacyCompact `json:"legacy,omitempty"`
	LegacyExact *LegacyCompact `json:"legacy_exact,omitempty"`
	// Transcripts are the compactions of the real transcripts given.
	Transcripts []TranscriptCompact `json:"transcripts,omitempty"`
	Error       string              `json:"error,omitempty"`
}

// LegacyCompact is one legacy compaction; its tokens are counted with
// Counter.
type LegacyCompact struct {
	Counter                string  `json:"counter,omitempty"`
	WallS                  float64 `json:"wall_s"`
	Rounds                 int     `json:"rounds"`
	TokensBefore           int     `json:"tokens_before"`
	TokensAfter            int     `json:"tokens_after"`
	IdentifierRetentionPct float64 `json:"identifier_retention_pct"`
	Error                  string  `json:"error,omitempty"`
}

// TranscriptCompact is the compaction of one real transcript.
type TranscriptCompact struct {
	Path         string  `json:"path"`
	WallS        float64 `json:"wall_s"`
	Rounds       int     `json:"rounds"`
	TokensBefore int     `json:"tokens_before"`
	TokensAfter  int     `json:"tokens_after"`
	Error        string  `json:"error,omitempty"`
}

// RecallReport is the recall suite (LoCoMo recall@k, percent).
type RecallReport struct {
	Source    string             `json:"source"`
	Questions int                `json:"questions"`
	RecallAt  map[string]float64 `json:"recall_at"`
	// PerCategory maps a LoCoMo category to its recall_at map.
	PerCategory map[string]map[string]float64 `json:"per_category,omitempty"`
	QueryP50Ms  float64                       `json:"query_p50_ms"`
	QueryP99Ms  float64                       `json:"query_p99_ms"`
	Turns       int                           `json:"turns"`
	// Path names the recall path measured.
	Path  string  `json:"path,omitempty"`
	WallS float64 `json:"wall_s"`
	Error string  `json:"error,omitempty"`
	// GateReport, when the recall path has a relevance gate, holds what it
	// injects (its keys sit beside recall_at).
	*locomo.GateReport
	// RecallAtNoSpeaker is RecallAt with the turns ingested without the
	// speaker's name (real messages have none), GateNoSpeaker the gate's
	// figures then.
	RecallAtNoSpeaker map[string]float64 `json:"recall_at_no_speaker,omitempty"`
	GateNoSpeaker     *locomo.GateReport `json:"gate_no_speaker,omitempty"`
	// Sets and SetsNoSpeaker are the figures of the evaluation split's
	// sets (locomo.SetTuneOn, locomo.SetHeldOut), with and without the
	// speaker prefix; absent when the file holds no conversation of the
	// split (the built-in fixture).
	Sets          map[string]locomo.SetRecall `json:"sets,omitempty"`
	SetsNoSpeaker map[string]locomo.SetRecall `json:"sets_no_speaker,omitempty"`
}

// LosslessReport is the lossless suite: import, compact, rotate, expand,
// compare byte for byte.
type LosslessReport struct {
	Messages         int     `json:"messages"`
	CompactRounds    int     `json:"compact_rounds"`
	Rotations        int     `json:"rotations"`
	Expanded         int     `json:"expanded"`
	LostOrAltered    int     `json:"lost_or_altered"`
	Extra            int     `json:"extra"`
	WallS            float64 `json:"wall_s"`
	FirstDifferentAt int     `json:"first_different_at,omitempty"`
	Error            string  `json:"error,omitempty"`
}

// FootprintReport is the footprint suite: memory and disk.
type FootprintReport struct {
	HeapMBOpen float64 `json:"heap_mb_open"`
	RSSMBOpen  float64 `json:"rss_mb_open"`
	HeapMB     float64 `json:"heap_mb"`
	// HeapPeakMB is the largest live heap of the suite (as each collection
	// found it, sampled every 50 ms): the bulk load of the history, with
	// Badger's compactions. Run alone (--suite footprint) it is the
	// engine's; beside the assemble suite it also holds the benchmark's
	// own data (the legacy baseline's copy of the history).
	HeapPeakMB float64 `json:"heap_peak_mb"`
	RSSMB      float64 `json:"rss_mb"`
	// RSSAnonMB is the anonymous part of RSSMB (without mapped files).
	RSSAnonMB   float64 `json:"rss_anon_mb"`
	AtMessages  int     `json:"at_messages"`
	DiskBytes   int64   `json:"disk_bytes"`
	RawJSON     int64   `json:"raw_json_bytes"`
	DiskRatio   float64 `json:"disk_ratio"`
	RSSBaseline float64 `json:"rss_mb_before_open"`
	Error       string  `json:"error,omitempty"`
}
