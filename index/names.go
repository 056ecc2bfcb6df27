package index

import (
	"context"
	"unicode"
	"unicode/utf8"
)

// Names in a prompt (issue #28): a question names people ("What did
// Caroline research?"), and the turns that hold the name are mostly the
// ones addressed to that person ("Wow, Caroline, …"), not the ones about
// the asked thing (said by Caroline, without her name). Recall ranks a
// hit that holds none of the prompt's other terms (its text or its
// context) below those that do (nameOnlyScale), and rewards the hits that
// hold more of the prompt's rarer other terms (subjectWeight).

// Ranking of hits on names. Tuned on locomo-dev3.json (recall@k of
// internal/locomo's TestRecallLoCoMo, with and without the speaker
// prefix): 0.5 and 0.5 raised recall@5 by 0.9 and 1.1 points and kept
// recall@25 within 0.2 of before; a larger subjectWeight ranked more
// evidence first (recall@1) but cost recall@25 with the speaker prefix.
var (
	// nameOnlyScale multiplies the score of a hit that matches only the
	// prompt's names while the prompt has other terms in the history.
	nameOnlyScale = 0.5
	// subjectWeight is the share of a hit's score that its coverage of
	// the prompt's terms other than names (Relevance.Coverage over them)
	// scales: score × (1 - subjectWeight + subjectWeight × coverage).
	subjectWeight = 0.5
)

// NameTerms returns the analyzed terms of the names in text: words written
// with a capital inside a sentence ("Caroline", "Caroline's"), not at its
// start and not in capitals only (an acronym, "LGBTQ", is a subject).
func NameTerms(text string) map[string]bool {
	if len(text) > 4096 {
		text = text[:4096]
	}
	if !utf8.ValidString(text) {
		text = toValidUTF8(text)
	}
	var out map[string]bool
	for _, t := range Analyze([]byte(text)) {
		if t.Type != AlphaNumeric || t.End-t.Start < 2 || !capitalised(text[t.Start:t.End]) || sentenceStart(text, t.Start) {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[string(t.Term)] = true
	}
	return out
}

// capitalised reports a word with a capital first letter and a lower-case
// letter after it.
func capitalised(w string) bool {
	r, n := utf8.DecodeRuneInString(w)
	if !unicode.IsUpper(r) {
		return false
	}
	for _, r := range w[n:] {
		if unicode.IsLower(r) {
			return true
		}
	}
	return false
}

// sentenceStart reports whether the word at byte i of text opens a
// sentence: nothing but spaces, quotes or brackets before it since the
// text's start or a '.', '!', '?', ':' or a line break.
func sentenceStart(text string, i int) bool {
	for i > 0 {
		r, n := utf8.DecodeLastRuneInString(text[:i])
		i -= n
		switch {
		case r == '.' || r == '!' || r == '?' || r == ':' || r == '\n':
			return true
		case unicode.IsSpace(r) || r == '"' || r == '\'' || r == '(' || r == '[' || r == '“' || r == '‘' || r == '*' || r == '-':
			continue
		}
		return false
	}
	return true
}

// rankOnSubject rescales the candidates' scores by how much of the
// prompt's subject (its terms other than names) each holds, when the
// prompt names someone and has other terms: it measures the candidates'
// relevance for those terms alone (r.Relevance), then restores the
// relevance of all terms the gate compares. cands are re-sorted.
func rankOnSubject(ctx context.Context, r Retriever, text string, terms []string, cands []Hit, agent string) error {
	subject := subjectTerms(text, terms, cands)
	if subject == nil {
		return nil
	}
	all := make([]Relevance, len(cands))
	for i := range cands {
		all[i] = cands[i].Relevance
		cands[i].Relevance = Relevance{}
	}
	if err := r.Relevance(ctx, subject, cands, agent); err != nil {
		return err
	}
	subj := make([]Relevance, len(cands))
	for i := range cands {
		subj[i] = cands[i].Relevance
		cands[i].Relevance = all[i]
	}
	scoreOnSubject(cands, subj)
	return nil
}

// subjectTerms returns the prompt's terms other than its names when it
// names someone and has other terms (nil: the ranking on the subject does
// not apply).
func subjectTerms(text string, terms []string, cands []Hit) []string {
	if len(cands) == 0 || (nameOnlyScale >= 1 && subjectWeight <= 0) {
		return nil
	}
	names := NameTerms(text)
	if len(names) == 0 {
		return nil
	}
	subject := make([]string, 0, len(terms))
	for _, t := range terms {
		if !names[t] {
			subject = append(subject, t)
		}
	}
	if len(subject) == 0 || len(subject) == len(terms) {
		return nil
	}
	return subject
}

// scoreOnSubject rescales each candidate's score by subj, its relevance
// for the subject alone, and re-sorts cands.
func scoreOnSubject(cands []Hit, subj []Relevance) {
	for i := range cands {
		if subj[i].Specificity == 0 {
			cands[i].Score *= nameOnlyScale
		}
		cands[i].Score *= 1 - subjectWeight + subjectWeight*subj[i].Coverage
	}
	sortHits(cands)
}
