// Package confhooks carries package lossless's test seams inside a
// config.Config without making them part of its API: package
// lossless/config keeps them in an unexported field and lends its address
// through Slot, which only packages under lossless/ can import.
package confhooks

// Slot returns the address of the test-seam slot of cfg, a
// *config.Config (nil in production; package lossless's tests put a
// pointer to their seams there before Open). Package config sets it in its
// init.
var Slot func(cfg any) *any
