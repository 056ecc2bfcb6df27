// Package faultsuite holds the fault-injection suite (issue #37 point 6):
// TestFaultInjection builds the lossless command, makes a compacted Badger
// store from a generated transcript (300 messages, internal/synth), records
// what every read command prints on it, then flips one byte at a random
// offset of one file of a fresh copy of the store at a time (the files taken
// in a seeded random order, so that every file of the store, the recall
// index's included, is hit once before any is hit twice) and runs every
// read command and one write on the damaged copy. Besides the random flips,
// it flips each change set of the store's Badger MANIFEST at its length, its
// checksum and its first data byte (-manifest=false leaves them out): a
// random offset rarely lands there, and a change set that does not check is
// where Badger's replay of the MANIFEST stops.
//
// What it asserts, for every flip:
//
//   - a read command (sessions, stats, export, grep, describe, expand,
//     doctor, doctor --deep, assemble --json) either exits non-zero or
//     prints exactly what it printed on the undamaged store: never exit 0
//     with other output;
//   - doctor --deep exits 0 only when every other command that reads the
//     store's records (sessions, stats, export, grep, describe, expand) read
//     it back unchanged (exit 0, the same output); doctor without --deep,
//     which reads every record but the messages, exits 0 only when stats
//     (records only) did;
//   - a command that opens the store read-only (all of them but assemble)
//     changes no file of it, damaged or not (every file's SHA-256 before and
//     after);
//   - no command panics or hangs (60 s);
//   - the write is an import of the same transcript with one message more
//     (acknowledged when it exits 0 saying it stored messages); after it,
//     export either fails (non-zero) or prints every original message byte
//     for byte followed by the new one, once; without an acknowledgement the
//     original messages alone are accepted too: never a short, changed or
//     duplicated export with exit 0.
//
// The suite is not part of `go test ./...`: it runs when asked for, as .ci/run
// does:
//
//	go test -run TestFaultInjection ./internal/faultsuite -flips 40
//
// -flips N runs N flips (default 40), -seed S another sequence of flips, and
// LOSSLESS_TEST_FAULTS=1 runs it with the defaults. Each flip's outcome is
// logged in a table (t.Log, shown with -v or on failure) with a summary line;
// each failure is reported with the file, the offset, the byte before and
// after, the command, and the first line where its output differs.
//
// The store is made anew on every run, and what it holds is not the same
// byte for byte from run to run (summary ids and creation times; the recall
// index's segment files depend on when Bleve merged them): a seed picks the
// same files by their place in the sorted listing and offsets drawn the same
// way, so a run repeats another closely, not exactly. The table names the
// bytes each run flipped.
package faultsuite
