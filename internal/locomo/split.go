package locomo

import "slices"

// The honest evaluation split (issue #40, point 5). The dev file
// locomo-dev3.json holds three conversations; the knobs tuned on LoCoMo
// (recall.questionShare and the bound on a question's recall, the recall
// item size, the ranking's name weights, the relevance gate) are to be
// chosen on two of them, the tune-on set, and reported on the third, the
// held-out set, as well as on all three. Every suite here reports its
// figures per set beside the figures of the whole file whenever the data
// holds the split's conversations.
//
// The held-out conversation is conv-41: the relevance gate's threshold was
// tuned on conv-26 alone (so conv-26 cannot be held out for it), and of
// conv-30 and conv-41 it is the larger (32 sessions, 663 turns, 193
// questions against 19, 369 and 105), so its figure is the less noisy.

// Set names of the split, the keys of the per-set figures.
const (
	// SetTuneOn is the conversations the knobs are tuned on.
	SetTuneOn = "tune_on"
	// SetHeldOut is the conversation held out of tuning.
	SetHeldOut = "held_out"
)

// HeldOutSample is the sample id of the held-out conversation.
const HeldOutSample = "conv-41"

// TuneOnSamples returns the sample ids of the tune-on conversations.
func TuneOnSamples() []string { return []string{"conv-26", "conv-30"} }

// SetOf returns the split set a conversation belongs to (SetTuneOn,
// SetHeldOut), or "" for a conversation outside the split (a synthetic
// fixture, another LoCoMo file).
func SetOf(sample string) string {
	switch {
	case sample == HeldOutSample:
		return SetHeldOut
	case slices.Contains(TuneOnSamples(), sample):
		return SetTuneOn
	}
	return ""
}

// Subset returns the conversations of convs that belong to set (SetTuneOn
// or SetHeldOut), in their order; none when convs holds no conversation of
// the split.
func Subset(convs []Conversation, set string) []Conversation {
	var out []Conversation
	for _, c := range convs {
		if SetOf(c.SampleID) == set {
			out = append(out, c)
		}
	}
	return out
}
