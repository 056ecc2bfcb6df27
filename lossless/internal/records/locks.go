package records

import "github.com/lossless-engine/contextengine/store"

// Names of the store's cross-process locks (store.Locker).

// ConvLockName names conversation c's lock, held with its in-memory
// state's lock by every write to it.
func ConvLockName(c store.ConvID) string { return "conv:" + c.String() }

// CompactLockName names the lock of the compaction of conversation c.
func CompactLockName(c store.ConvID) string { return "compact:" + c.String() }

// NamesLockName names the lock of agent's session names (conversation
// creation, rotation and retention).
func NamesLockName(agent string) string { return "names:" + agent }

// ImportLockName names the lock of the imported file of key key.
func ImportLockName(key string) string { return "import:" + key }

// The store-wide locks: the subagent records' (SubagentsLockName) and the
// format record's (MetaLockName).
const (
	SubagentsLockName = "subagents"
	MetaLockName      = "meta"
)
