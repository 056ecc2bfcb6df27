package store

import (
	"errors"
	"fmt"
)

// GetEach answers a batched read (Reader.Get) with r's point reads, one
// Ref at a time: for a backend whose point reads are local and cheap
// (badgerstore, memstore), where a batch saves nothing. A missing or
// undecodable record goes in its Got.Err; any other error ends the read.
func GetEach(r Reader, refs []Ref) ([]Got, error) {
	got := make([]Got, len(refs))
	for i, ref := range refs {
		g := &got[i]
		switch ref.Kind {
		case RefConversation:
			g.Conversation, g.Err = r.Conversation(ref.Conv)
		case RefMessage:
			*g = getMessage(r, ref)
		case RefSummary:
			g.Summary, g.Err = r.Summary(ref.Conv, ref.ID)
		case RefSubagent:
			g.Subagent, g.Err = r.Subagent(ref.Sub)
		case RefSubagentByChild:
			if g.Sub, g.Err = r.SubagentByChild(ref.Agent, ref.ID); g.Err == nil {
				g.Subagent, g.Err = r.Subagent(g.Sub)
			}
		default:
			return nil, fmt.Errorf("store: get: ref %d of unknown kind %q", i, ref.Kind)
		}
		if g.Err != nil && !errors.Is(g.Err, ErrNotFound) && !errors.Is(g.Err, ErrCorrupt) {
			return nil, g.Err
		}
	}
	return got, nil
}

// getMessage reads message ref.Seq of ref.Conv as it stands in a context
// (RefMessage).
func getMessage(r Reader, ref Ref) Got {
	var g Got
	h, err := r.MessageHeader(ref.Conv, ref.Seq)
	if err != nil {
		g.Err = err
		return g
	}
	if h.Flags&FlagLarge != 0 {
		v, err := r.Large(ref.Conv, ref.Seq)
		if err == nil {
			g.Message, g.Large = h, v
			return g
		}
		if !errors.Is(err, ErrNotFound) {
			g.Err = err
			return g
		}
	}
	g.Message, g.Err = r.Message(ref.Conv, ref.Seq)
	return g
}
