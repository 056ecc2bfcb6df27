package contextengine

import "errors"

// Registration refusals (CONTRACT §4), checked with errors.Is.
var (
	// ErrEmptyID is returned by Register for an empty id.
	ErrEmptyID = errors.New("contextengine: empty engine id")
	// ErrNilFactory is returned by Register for a nil factory.
	ErrNilFactory = errors.New("contextengine: nil engine factory")
	// ErrReservedID is returned by Register for the id "legacy".
	ErrReservedID = errors.New("contextengine: engine id reserved by core")
	// ErrOwnerConflict is returned by Register when another owner holds the id.
	ErrOwnerConflict = errors.New("contextengine: engine id registered by another owner")
	// ErrUnknownEngine is the reason recorded when the slot names an engine
	// nobody registered.
	ErrUnknownEngine = errors.New("contextengine: unknown engine (forgotten import?)")
	// ErrQuarantined is wrapped by errors the guard returns for calls that
	// cannot be re-run on legacy (compact, prepareSubagentSpawn, commitTurn).
	ErrQuarantined = errors.New("contextengine: engine quarantined")
)

// Driver errors, checked with errors.Is.
var (
	// ErrContextOverflow is what a ModelFunc wraps when the provider refused
	// the prompt as too long for the context window. The driver then runs
	// overflow recovery.
	ErrContextOverflow = errors.New("contextengine: context overflow")
	// ErrOverflowUnrecovered is returned when the prompt still overflows
	// after MaxOverflowCompactions recovery compactions.
	ErrOverflowUnrecovered = errors.New("contextengine: context overflow not recovered by compaction")
	// ErrPromptFailed wraps the error of a failed model call.
	ErrPromptFailed = errors.New("contextengine: prompt failed")
)

// ErrConfig is wrapped by every configuration error.
var ErrConfig = errors.New("contextengine: invalid config")

// errPanic marks an error made from a recovered panic.
var errPanic = errors.New("contextengine: engine panicked")
