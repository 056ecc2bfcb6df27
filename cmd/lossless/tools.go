package main

import (
	"context"
	"fmt"

	"github.com/lossless-engine/contextengine/lossless"
)

func cmdTools() *command {
	return &command{
		name: "tools", args: "",
		summary: "Print the model tools the engine offers (lcm_grep, lcm_describe, lcm_expand) with their JSON schemas.",
		run: func(ctx context.Context, c *cmdEnv, args []string) error {
			if len(args) > 0 {
				return usagef("tools takes no arguments")
			}
			defs := lossless.ToolDefinitions()
			if c.json {
				return printJSON(c.io.out, defs)
			}
			for _, d := range defs {
				fmt.Fprintf(c.io.out, "%s\n  %s\n  parameters: %s\n", d.Name, d.Description, d.Parameters)
			}
			return nil
		},
	}
}
