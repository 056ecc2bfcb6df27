package config_test

import (
	"fmt"

	"github.com/lossless-engine/contextengine/lossless/config"
)

// Parse reads the plugin's JSON, fills in the defaults and refuses a typo.
func ExampleParse() {
	c, err := config.Parse([]byte(`{"freshTailMessages": 10, "recall": {"enabled": false}}`))
	fmt.Println(c.FreshTailMessages, c.DefaultTokenBudget, c.RecallEnabled(), err)
	_, err = config.Parse([]byte(`{"storDir": "typo"}`))
	fmt.Println(err)
	// Output:
	// 10 128000 false <nil>
	// lossless: config: json: unknown field "storDir"
}
