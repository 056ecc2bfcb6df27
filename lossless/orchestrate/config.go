package orchestrate

// Config is the part of the engine's configuration the runs read (a value
// the engine fills from its own Config).
type Config struct {
	// Engine is the engine's id (CompactDetails.Engine).
	Engine string
	// ContextThreshold is the share of the budget over which a
	// conversation is compacted after a turn or in Maintain.
	ContextThreshold float64
	// FreshTailMessages is the number of newest messages Maintain never
	// rewrites.
	FreshTailMessages int
	// MaintainMinTokens is the size over which Maintain rewrites an old
	// tool result (0: DefaultMaintainMinTokens).
	MaintainMinTokens int
	// RotateBytes is the transcript size from which Compact rotates it.
	RotateBytes int64
}
