package tools

import "errors"

// ErrBadArgs is wrapped by the errors of tool handlers given arguments
// they cannot use (lossless.ErrBadToolArgs is this error).
var ErrBadArgs = errors.New("lossless: bad tool arguments")
