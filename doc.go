// Package contextengine is the user-facing side of the context-engine
// contract, the way database/sql is the user-facing side of
// database/sql/driver: it holds the engine registry, the exclusive
// contextEngine slot of openclaw.json, failure isolation, host requirements,
// the host's message pipeline and a turn driver for Go hosts. The contract
// itself (interfaces, params, results, messages) lives in package core;
// implementations register themselves here (package lossless does so in its
// init) and are never imported by this package, except package legacy,
// which this package registers itself under the reserved id "legacy".
//
// # Registry
//
// [Register] adds an engine factory under an id for an owner (the plugin
// that provides it). Refused: an empty id, a nil factory, the id "legacy"
// (reserved for core) and an id registered by another owner; the same owner
// may refresh its registration. [Engines] lists the ids, sorted. A
// [Registry] value does the same for tests and embedding.
//
// # The slot
//
// [LoadConfig] reads openclaw.json (JSON5). [Config.Resolve] picks the engine
// for plugins.slots.contextEngine as CONTRACT §4 says and tells why
// ([Resolution]); [Registry.Open] resolves it against the registry and
// returns a [Guarded] engine.
//
// # Failure isolation
//
// A [Guarded] engine forwards every call to the selected engine. When the
// engine cannot be resolved, or a method returns an error or panics, the
// engine is quarantined for the process (see [Registry.Quarantines]) and the
// call is re-run on legacy (compact and prepareSubagentSpawn return the
// error instead). Cancellation of the caller's context never quarantines.
//
// # Hosts
//
// [CheckHostRequirements] fails a run closed when the host lacks a
// capability the engine requires; [EmbeddedRuntime], [CodexAppServer] and
// [GenericCLI] are the hosts of CONTRACT §5. The pipeline ([Sanitize],
// [Validate], [Limit]) prepares the session view before assemble, and
// [Driver] runs whole turns in the contract's order around a [ModelFunc]
// the host supplies, with the overflow precheck, recovery compaction and
// transcript rotation of CONTRACT §6.
package contextengine
