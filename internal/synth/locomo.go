package synth

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// LoCoMoTurn is one dialog turn in LoCoMo's format.
type LoCoMoTurn struct {
	Speaker string `json:"speaker"`
	DiaID   string `json:"dia_id"`
	Text    string `json:"text"`
}

// LoCoMoQA is one question in LoCoMo's format. Category 5 questions are
// adversarial: they carry adversarial_answer instead of answer.
type LoCoMoQA struct {
	Question          string   `json:"question"`
	Answer            any      `json:"answer,omitempty"`
	AdversarialAnswer string   `json:"adversarial_answer,omitempty"`
	Evidence          []string `json:"evidence"`
	Category          int      `json:"category"`
}

// LoCoMoOptions sizes a fixture. Zero fields take the defaults in
// parentheses.
type LoCoMoOptions struct {
	Conversations int // (2)
	Sessions      int // sessions per conversation (4)
	Turns         int // turns per session (14)
}

type fact struct {
	say      string // what the speaker says; %[1]s is the value, %[2]s the other speaker
	question string // %[1]s is the speaker
	values   []string
	category int
}

var locomoFacts = []fact{
	{"I finally adopted a puppy last weekend, we named him %[1]s!", "What did %[1]s name the new puppy?", []string{"Biscuit", "Pretzel", "Juniper", "Waffles"}, 1},
	{"I started taking %[1]s lessons at the community centre on Tuesdays.", "Which instrument is %[1]s learning?", []string{"cello", "banjo", "saxophone", "harp"}, 1},
	{"We're moving to %[1]s next month because of my new job.", "Where is %[1]s moving to?", []string{"Lisbon", "Montreal", "Osaka", "Tallinn"}, 1},
	{"My sister's wedding is on %[1]s, I'm so nervous about my speech.", "When is %[1]s's sister getting married?", []string{"14 June 2023", "2 September 2023", "30 April 2023", "9 December 2023"}, 2},
	{"I ran my first half marathon in %[1]s, it took me just under two hours.", "How long did %[1]s's first half marathon take, and where was it?", []string{"Porto", "Denver", "Kyoto", "Ghent"}, 3},
	{"I've been volunteering at the %[1]s every Saturday morning.", "Where does %[1]s volunteer on Saturdays?", []string{"animal shelter", "food bank", "public library", "botanical garden"}, 1},
	{"The book club picked %[1]s this month and I couldn't put it down.", "Which book did %[1]s's book club read?", []string{"The Overstory", "Piranesi", "Klara and the Sun", "Educated"}, 1},
	{"I got a promotion, I'm now the %[1]s at the clinic!", "What is %[1]s's new role at the clinic?", []string{"head nurse", "office manager", "lead therapist", "research coordinator"}, 4},
	{"My grandmother taught me her %[1]s recipe over the holidays.", "Which recipe did %[1]s learn from a grandmother?", []string{"pierogi", "tamales", "baklava", "kimchi stew"}, 4},
	{"I signed up for a pottery class and made a %[1]s on the wheel.", "What did %[1]s make in pottery class?", []string{"blue vase", "set of mugs", "fruit bowl", "teapot"}, 1},
}

var locomoChat = []string{
	"That sounds wonderful, tell me more!",
	"Haha, I know exactly what you mean.",
	"How have the kids been lately?",
	"Work has been hectic, but I'm hanging in there.",
	"We should grab coffee soon and catch up properly.",
	"I've been trying to sleep more and scroll less.",
	"The weather has been lovely, we went for a long walk by the river.",
	"Thanks for asking, it means a lot.",
	"I watched a documentary about octopuses last night, fascinating creatures.",
	"Did you end up trying that new bakery downtown?",
	"My week was mostly errands and laundry, nothing exciting.",
	"I'm proud of you, that takes courage.",
}

var locomoNames = [][2]string{{"Priya", "Tomasz"}, {"Noor", "Elliot"}, {"Camila", "Jonas"}, {"Aiko", "Marcus"}}

// LoCoMo returns a small recall fixture in LoCoMo's JSON format (a list of
// samples with sample_id, conversation and qa): per conversation, sessions of
// chit-chat with facts planted in known turns, and one question per fact
// whose evidence is that turn, plus one adversarial (category 5) question.
// The default size is about 20 KB.
func LoCoMo(seed uint64, opts LoCoMoOptions) []byte {
	if opts.Conversations <= 0 {
		opts.Conversations = 2
	}
	if opts.Sessions <= 0 {
		opts.Sessions = 4
	}
	if opts.Turns <= 0 {
		opts.Turns = 14
	}
	r := rand.New(rand.NewPCG(seed, 0x10c0))
	var samples []map[string]any
	for c := 0; c < opts.Conversations; c++ {
		names := locomoNames[c%len(locomoNames)]
		conv := map[string]any{"speaker_a": names[0], "speaker_b": names[1]}
		var qa []LoCoMoQA
		day := time.Date(2023, 3, 1+r.IntN(20), 13, 30, 0, 0, time.UTC)
		facts := r.Perm(len(locomoFacts))
		fi := 0
		for s := 1; s <= opts.Sessions; s++ {
			day = day.AddDate(0, 0, 5+r.IntN(20))
			conv[fmt.Sprintf("session_%d_date_time", s)] = strings.ToLower(day.Format("3:04 pm")) + " on " + day.Format("2 January, 2006")
			// Plant two facts per session at random turns.
			plant := map[int]bool{r.IntN(opts.Turns): true, r.IntN(opts.Turns): true}
			var turns []LoCoMoTurn
			for t := 1; t <= opts.Turns; t++ {
				speaker := names[(t+1)%2]
				other := names[t%2]
				text := locomoChat[r.IntN(len(locomoChat))]
				if plant[t-1] && fi < len(facts) {
					f := locomoFacts[facts[fi]]
					fi++
					v := f.values[r.IntN(len(f.values))]
					text = fmt.Sprintf(f.say, v, other)
					id := fmt.Sprintf("D%d:%d", s, t)
					qa = append(qa, LoCoMoQA{Question: fmt.Sprintf(f.question, speaker), Answer: v,
						Evidence: []string{id}, Category: f.category})
				}
				turns = append(turns, LoCoMoTurn{Speaker: speaker, DiaID: fmt.Sprintf("D%d:%d", s, t), Text: text})
			}
			conv[fmt.Sprintf("session_%d", s)] = turns
		}
		qa = append(qa, LoCoMoQA{Question: fmt.Sprintf("What did %s name the pet parrot?", names[1]),
			AdversarialAnswer: "Not mentioned", Evidence: []string{}, Category: 5})
		samples = append(samples, map[string]any{"sample_id": fmt.Sprintf("synth-%d", c+1),
			"conversation": conv, "qa": qa})
	}
	b, err := json.Marshal(samples)
	if err != nil {
		panic(fmt.Sprintf("synth: encode locomo: %v", err)) // plain values only
	}
	return b
}
