package reports

// Quoted is a figure quoted from the paper, for the tables that set the
// paper's numbers beside a run's own.
type Quoted struct {
	// Key names the figure for programs (e.g. "correctness.construction").
	Key string
	// Metric says what the figure is, for people.
	Metric string
	// Value is the figure as the paper states it.
	Value string
	// Source is where it comes from: "paper".
	Source string
	// Quote is the phrase of the paper's abstract that states it, verbatim.
	Quote string
}

// PaperSource is the Source of every figure quoted from the paper.
const PaperSource = "paper"

// PaperFigures returns the figures that the paper's abstract states, in the
// order it states them, each with the phrase it comes from. The last entry
// is the comparison with frontier LLMs, quoted as text: the abstract gives
// no numbers for it beyond the parameter counts quoted, so none are made up.
func PaperFigures() []Quoted {
	q := []Quoted{
		{
			Key: "dataset.workloads", Metric: "distinct workloads (TVM MetaSchedule searches)", Value: "54,116",
			Quote: "build training data on 54,116 distinct workloads",
		},
		{
			Key: "dataset.examples", Metric: "training examples, both sets", Value: "108,594",
			Quote: "construct 108,594 examples in two training sets",
		},
		{
			Key: "dataset.construction", Metric: "construction examples (optimized script from an unoptimized kernel)", Value: "60,236",
			Quote: "60,236 teach the model to generate an optimized script from an unoptimized kernel",
		},
		{
			Key: "dataset.refinement", Metric: "refinement examples (better script given the kernel and a somewhat optimized script)", Value: "48,358",
			Quote: "48,358 teach it to produce a better script given the kernel and a somewhat optimized script",
		},
		{
			Key: "model.parameters", Metric: "model parameters", Value: "8 billion",
			Quote: "a model with 8 billion parameters",
		},
		{
			Key: "correctness.construction", Metric: "per-attempt correctness, construction (after SFT and RL)", Value: "91.27%",
			Quote: "per-attempt correctness of 91.27% for construction",
		},
		{
			Key: "correctness.refinement", Metric: "per-attempt correctness, refinement (after SFT and RL)", Value: "92.01%",
			Quote: "92.01% for refinement",
		},
		{
			Key: "rl_faster.construction", Metric: "construction tasks on which RL's kernel is faster than SFT's", Value: "88 of 102",
			Quote: "faster kernels than supervised training on 88 of 102 construction tasks",
		},
		{
			Key: "rl_faster.refinement", Metric: "refinement prompts on which RL's kernel is faster than SFT's", Value: "145 of 170",
			Quote: "145 of 170 refinement prompts",
		},
		{
			Key: "frontier_llms", Metric: "comparison with frontier LLMs (quoted; the abstract gives no per-model numbers)",
			Value: "higher per-attempt correctness and better kernel performance than six frontier LLMs",
			Quote: "achieves higher per-attempt correctness and better kernel performance than six frontier LLMs—GPT-6 Astra, Opus 5, Kimi-K3, and GLM-5.3 among them, each with hundreds of billions to trillions of parameters",
		},
	}
	for i := range q {
		q[i].Source = PaperSource
	}
	return q
}
