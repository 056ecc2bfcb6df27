package transcript

import "errors"

// ErrNotSessionFile is wrapped by the error of an import of a path that is
// not a regular file (a directory, a device such as /dev/zero, a pipe).
var ErrNotSessionFile = errors.New("lossless: not a session file")
