package storetest_test

import (
	"context"
	"testing"

	"github.com/lossless-engine/contextengine/dag"
	"github.com/lossless-engine/contextengine/dag/storetest"
)

func TestMemory(t *testing.T) {
	storetest.Run(t, func(t *testing.T) (dag.Store, storetest.AppendFunc) {
		m := dag.NewMemory()
		return m, func(_ context.Context, role, text string, tokens int, ts int64) (uint64, error) {
			return m.Append(role, text, tokens, ts), nil
		}
	})
}
