package lossless

import (
	"github.com/lossless-engine/contextengine/core"
	"github.com/lossless-engine/contextengine/lossless/recalled"
)

func holdsSummary(msgs []core.Message) bool { return recalled.HoldsSummary(msgs) }
