// Package archtest holds tests of the module's source as a whole, parsed
// with go/parser: rules that no single package's tests can check, such as
// "no package-level mutable state in production code" (issue 40). It has
// no code of its own.
package archtest
