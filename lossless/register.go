package lossless

import contextengine "github.com/lossless-engine/contextengine"

// Owner is the owner name the engine registers under.
const Owner = "lossless-engine"

func init() {
	// database/sql style: importing this package registers the engine.
	if err := contextengine.Register(EngineID, Factory, Owner); err != nil {
		panic("lossless: register: " + err.Error())
	}
}
