package bleveindex

import (
	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/registry"

	"github.com/lossless-engine/contextengine/index"
)

// The chat analyzer is package index's (index.Analyze), registered with
// Bleve's registry under index.AnalyzerChat: the index mapping names it,
// and every text field is analyzed by it. Both backends (this one and
// package pgstore) analyse with that one code path.
func init() {
	registry.RegisterAnalyzer(index.AnalyzerChat, func(map[string]interface{}, *registry.Cache) (analysis.Analyzer, error) {
		return chatAnalyzer{}, nil
	})
}

// chatAnalyzer is index.Analyze as a Bleve analyzer.
type chatAnalyzer struct{}

// Analyze implements analysis.Analyzer.
func (chatAnalyzer) Analyze(input []byte) analysis.TokenStream {
	toks := index.Analyze(input)
	if len(toks) == 0 {
		return analysis.TokenStream{}
	}
	slab := make([]analysis.Token, len(toks))
	out := make(analysis.TokenStream, len(toks))
	for i, t := range toks {
		slab[i] = analysis.Token{
			Term:     t.Term,
			Start:    t.Start,
			End:      t.End,
			Position: t.Position,
			Type:     analysis.TokenType(t.Type),
			KeyWord:  t.KeyWord,
		}
		out[i] = &slab[i]
	}
	return out
}
