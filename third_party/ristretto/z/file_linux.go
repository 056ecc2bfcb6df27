/*
 * SPDX-FileCopyrightText: © Hypermode Inc. <hello@hypermode.com>
 * SPDX-License-Identifier: Apache-2.0
 */

package z

import (
	"fmt"
)

// Truncate would truncate the mmapped file to the given size. On Linux, we truncate
// the underlying file and then call mremap, but on other systems, we unmap first,
// then truncate, then re-map.
func (m *MmapFile) Truncate(maxSz int64) error {
	if err := m.Sync(); err != nil {
		return fmt.Errorf("while sync file: %s, error: %v\n", m.Fd.Name(), err)
	}
	if err := m.Fd.Truncate(maxSz); err != nil {
		return fmt.Errorf("while truncate file: %s, error: %v\n", m.Fd.Name(), err)
	}
	// lossless patch: allocate a grown file's new blocks (see
	// OpenMmapFileUsing); on a full disk the file keeps its size.
	if old := int64(len(m.Data)); maxSz > old {
		if err := Preallocate(m.Fd, old, maxSz-old); err != nil {
			_ = m.Fd.Truncate(old)
			return fmt.Errorf("z: allocate %d bytes for %s: %w", maxSz-old, m.Fd.Name(), err)
		}
	}

	var err error
	m.Data, err = mremap(m.Data, int(maxSz)) // Mmap up to max size.
	return err
}
