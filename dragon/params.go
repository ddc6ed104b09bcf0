package dragon

import (
	"fmt"
	"math"
	"math/rand/v2"
)

// initKind says how a parameter starts.
type initKind int

const (
	initNormal   initKind = iota // N(0, 0.02)
	initResidual                 // N(0, 0.02/sqrt(2L)): projections into the residual stream
	initZero                     // biases
	initOne                      // LayerNorm gains
)

// initStd is the standard deviation of the weight initialisation (GPT-2,
// nanoGPT, llm.c).
const initStd = 0.02

// paramSpec describes one parameter tensor of a model.
type paramSpec struct {
	Name  string
	Shape []int64
	Init  initKind
	// Decay says whether AdamW's weight decay applies: matrices and
	// embeddings yes, biases and LayerNorm parameters no.
	Decay bool
}

func (p paramSpec) numel() int64 {
	n := int64(1)
	for _, d := range p.Shape {
		n *= d
	}
	return n
}

// paramSpecs lists the parameters of cfg in a fixed order, which is also
// their order in a checkpoint. Linear weights are stored [out, in], as
// torch's linear expects.
func paramSpecs(cfg Config) []paramSpec {
	d, v, c := int64(cfg.Width), int64(cfg.Vocab), int64(cfg.Context)
	specs := []paramSpec{
		{Name: "wte", Shape: []int64{v, d}, Init: initNormal, Decay: true},
		{Name: "wpe", Shape: []int64{c, d}, Init: initNormal, Decay: true},
	}
	for l := range cfg.Layers {
		p := fmt.Sprintf("h.%d.", l)
		specs = append(specs,
			paramSpec{Name: p + "ln1.w", Shape: []int64{d}, Init: initOne},
			paramSpec{Name: p + "ln1.b", Shape: []int64{d}, Init: initZero},
			paramSpec{Name: p + "attn.qkv.w", Shape: []int64{3 * d, d}, Init: initNormal, Decay: true},
			paramSpec{Name: p + "attn.qkv.b", Shape: []int64{3 * d}, Init: initZero},
			paramSpec{Name: p + "attn.proj.w", Shape: []int64{d, d}, Init: initResidual, Decay: true},
			paramSpec{Name: p + "attn.proj.b", Shape: []int64{d}, Init: initZero},
			paramSpec{Name: p + "ln2.w", Shape: []int64{d}, Init: initOne},
			paramSpec{Name: p + "ln2.b", Shape: []int64{d}, Init: initZero},
			paramSpec{Name: p + "mlp.fc.w", Shape: []int64{4 * d, d}, Init: initNormal, Decay: true},
			paramSpec{Name: p + "mlp.fc.b", Shape: []int64{4 * d}, Init: initZero},
			paramSpec{Name: p + "mlp.proj.w", Shape: []int64{d, 4 * d}, Init: initResidual, Decay: true},
			paramSpec{Name: p + "mlp.proj.b", Shape: []int64{d}, Init: initZero},
		)
	}
	specs = append(specs,
		paramSpec{Name: "lnf.w", Shape: []int64{d}, Init: initOne},
		paramSpec{Name: "lnf.b", Shape: []int64{d}, Init: initZero},
	)
	return specs
}

// initValues returns the initial values of every parameter of cfg, in
// paramSpecs order, drawn from a generator seeded with seed. They are
// computed in Go, so they do not depend on libtorch's thread count or RNG.
func initValues(cfg Config, seed int64) [][]float64 {
	rng := rand.New(rand.NewPCG(uint64(seed), 0x696e6974))
	resid := initStd / math.Sqrt(2*float64(cfg.Layers))
	specs := paramSpecs(cfg)
	out := make([][]float64, len(specs))
	for i, s := range specs {
		v := make([]float64, s.numel())
		switch s.Init {
		case initNormal:
			for j := range v {
				v[j] = rng.NormFloat64() * initStd
			}
		case initResidual:
			for j := range v {
				v[j] = rng.NormFloat64() * resid
			}
		case initOne:
			for j := range v {
				v[j] = 1
			}
		case initZero:
		}
		out[i] = v
	}
	return out
}
