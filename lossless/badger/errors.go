package badger

import "errors"

// ErrNoDir: Open was given no store directory.
var ErrNoDir = errors.New("badger: no store directory (Config.StoreDir)")
