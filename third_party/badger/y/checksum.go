/*
 * SPDX-FileCopyrightText: © 2017-2025 Istari Digital, Inc.
 * SPDX-License-Identifier: Apache-2.0
 */

package y

import (
	stderrors "errors"
	"fmt"
	"hash/crc32"

	"github.com/cespare/xxhash/v2"

	"github.com/lossless-engine/contextengine/third_party/badger/pb"
)

// ErrChecksumMismatch is returned at checksum mismatch.
var ErrChecksumMismatch = stderrors.New("checksum mismatch")

// CalculateChecksum calculates checksum for data using ct checksum type.
func CalculateChecksum(data []byte, ct pb.Checksum_Algorithm) uint64 {
	switch ct {
	case pb.Checksum_CRC32C:
		return uint64(crc32.Checksum(data, CastagnoliCrcTable))
	case pb.Checksum_XXHash64:
		return xxhash.Sum64(data)
	default:
		panic("checksum type not supported")
	}
}

// VerifyChecksum validates the checksum for the data against the given expected checksum.
func VerifyChecksum(data []byte, expected *pb.Checksum) error {
	actual := CalculateChecksum(data, expected.Algo)
	if actual != expected.Sum {
		// lossless patch: %w keeps ErrChecksumMismatch for errors.Is (Wrapf
		// formats it into the text).
		return fmt.Errorf("%w (actual %d, expected %d)", ErrChecksumMismatch, actual, expected.Sum)
	}
	return nil
}
