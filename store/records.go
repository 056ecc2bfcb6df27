package store

// FileCheckpoint is an imported transcript file's progress.
type FileCheckpoint struct {
	SessionID string `json:"sessionId"`
	// Conv names the conversation (hex; retention deletes checkpoints by it).
	Conv    string `json:"conv"`
	Offset  int64  `json:"offset"`
	Line    int    `json:"line"`
	Index   int    `json:"index"`
	MtimeNs int64  `json:"mtimeNs"`
	// HeadHash and TailHash are SHA-256 of the first line and of the bytes
	// from the last entry's start to Offset: a file rewritten before Offset
	// is detected and imported again (without duplicates).
	HeadHash string `json:"headHash"`
	// PrefixHash is SHA-256 of the bytes [0, Offset): any change to the
	// imported part, of the same length or not, is detected (checkpoints
	// written before it have none).
	PrefixHash string `json:"prefixHash,omitempty"`
	TailStart  int64  `json:"tailStart"`
	TailHash   string `json:"tailHash"`
	// Reconcile is set while a read from the start into a conversation that
	// held messages before is not reconciled yet: the first sequence number
	// the read may have appended. Such a checkpoint is not trusted; the next
	// import reads the file again.
	Reconcile uint64 `json:"reconcile,omitempty"`
}

// HostCheckpoint is the progress of reading a host-kept transcript.
type HostCheckpoint struct {
	// Conv names the conversation (retention deletes checkpoints by it).
	Conv string `json:"conv"`
	// Cursor is the host's cursor after the last page stored.
	Cursor string `json:"cursor,omitempty"`
	// Entries is the number of entries mapped (the next entry's index).
	Entries uint64 `json:"entries"`
	// Imported counts the messages stored from the reads, Skipped the
	// entries that could not be stored.
	Imported int `json:"imported"`
	Skipped  int `json:"skipped,omitempty"`
}

// Turn is what the store keeps of a committed turn (commitTurn
// idempotency: the advancement key maps to it).
type Turn struct {
	LogicalTurnID    string `json:"logicalTurnId,omitempty"`
	AdmissionEntryID string `json:"admissionEntryId,omitempty"`
	TerminalEntryID  string `json:"terminalEntryId,omitempty"`
	// Seqs are the sequence numbers of the turn's messages, in order (a
	// message already stored before the commit keeps its sequence).
	Seqs        []uint64 `json:"seqs"`
	Stored      int      `json:"stored"`
	CommittedAt int64    `json:"committedAt"`
}

// Subagent is the stored record of a subagent preparation.
type Subagent struct {
	Agent           string `json:"agent"`
	ChildSessionKey string `json:"childSessionKey"`
	ChildSessionID  string `json:"childSessionId,omitempty"`
	ParentAgent     string `json:"parentAgent"`
	ParentKey       string `json:"parentSessionKey,omitempty"`
	ParentSessionID string `json:"parentSessionId,omitempty"`
	// ParentConv is the parent's conversation id (hex; "" when the parent
	// was never stored).
	ParentConv string `json:"parentConversation,omitempty"`
	Mode       string `json:"contextMode"`
	State      string `json:"state"`
	// EndReason is the reason of OnSubagentEnded (completed, released).
	EndReason string `json:"endReason,omitempty"`
	Created   int64  `json:"created"`
	// ExpiresAt is when a preparation whose child never started is swept
	// (Unix ms; 0: never).
	ExpiresAt int64 `json:"expiresAt,omitempty"`
	EndedAt   int64 `json:"endedAt,omitempty"`
	// SnapshotItems and SnapshotTokens describe the fork snapshot.
	SnapshotItems  int `json:"snapshotItems"`
	SnapshotTokens int `json:"snapshotTokens"`
	// Token identifies one preparation: its rollback removes only it.
	Token string `json:"token"`
}
