// Package ident finds the opaque identifiers of a text: URLs, UUIDs, hex
// hashes, file paths and file names, IPv4 addresses, host names and
// host:port pairs, and code names (qualified names such as core.Truncate,
// snake_case and camelCase names, name@version and e-mail-like tokens).
//
// It is the one extractor of the project: the compaction (which lists the
// identifiers a summary lost and measures their retention), the extractive
// summarizer (which keeps the sentences that carry them) and the recall
// index (which indexes each identifier whole beside its parts) all use Scan.
//
// The scan is linear, allocation-light and ASCII-only: a word with non-ASCII
// bytes is never an identifier. Every identifier it reports is a substring
// of the text, trimmed of sentence punctuation.
package ident
