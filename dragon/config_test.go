package dragon

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	ok := DefaultConfig()
	if err := ok.Validate(); err != nil {
		t.Fatalf("DefaultConfig().Validate() = %v", err)
	}
	tests := []struct {
		name   string
		edit   func(*Config)
		fields []string
	}{
		{"zero layers", func(c *Config) { c.Layers = 0 }, []string{"layers"}},
		{"heads do not divide width", func(c *Config) { c.Heads = 5 }, []string{"heads"}},
		{"negative heads", func(c *Config) { c.Heads = -1 }, []string{"heads"}},
		{"tiny vocab", func(c *Config) { c.Vocab = 1 }, []string{"vocab"}},
		{"huge context", func(c *Config) { c.Context = 1 << 14 }, []string{"context"}},
		{"dropout 1", func(c *Config) { c.Dropout = 1 }, []string{"dropout"}},
		{"dropout NaN", func(c *Config) { c.Dropout = math.NaN() }, []string{"dropout"}},
		{"several", func(c *Config) { c.Width, c.Vocab = 0, 0 }, []string{"width", "vocab"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			err := c.Validate()
			if err == nil {
				t.Fatalf("Validate(%+v) = nil; want errors for %v", c, tt.fields)
			}
			var got []string
			for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
				var fe *FieldError
				if !errors.As(e, &fe) {
					t.Fatalf("error %v is not a *FieldError", e)
				}
				got = append(got, fe.Field)
				if !strings.HasPrefix(e.Error(), "dragon: "+fe.Field+": ") {
					t.Errorf("error %q does not start with the field name", e)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.fields, ",") {
				t.Errorf("Validate(%+v) names fields %v; want %v", c, got, tt.fields)
			}
		})
	}
}

func TestNumParams(t *testing.T) {
	tests := []struct {
		cfg  Config
		want int64
	}{
		// The benchmark sizes of shared/design/lm-rl.md §2.
		{Config{Layers: 4, Width: 192, Heads: 6, Context: 256, Vocab: 512}, 1_927_296},
		{Config{Layers: 8, Width: 256, Heads: 8, Context: 256, Vocab: 512}, 6_515_200},
		{Config{Layers: 12, Width: 384, Heads: 6, Context: 256, Vocab: 512}, 21_589_248},
	}
	for _, tt := range tests {
		if got := tt.cfg.NumParams(); got != tt.want {
			t.Errorf("%+v.NumParams() = %d; want %d", tt.cfg, got, tt.want)
		}
		var sum int64
		for _, s := range paramSpecs(tt.cfg) {
			sum += s.numel()
		}
		if sum != tt.want {
			t.Errorf("paramSpecs(%+v) hold %d values; want %d", tt.cfg, sum, tt.want)
		}
	}
}

func TestTrainFLOPsPerToken(t *testing.T) {
	c := Config{Layers: 8, Width: 256, Heads: 8, Context: 256, Vocab: 512}
	// 6·(8·12·256² + 512·256) + 12·8·256·256
	want := 6*(8*12*256*256.0+512*256) + 12*8*256*256.0
	if got := c.TrainFLOPsPerToken(256); got != want {
		t.Errorf("TrainFLOPsPerToken(256) = %v; want %v", got, want)
	}
}

func TestParamSpecsAndInit(t *testing.T) {
	cfg := Config{Layers: 3, Width: 64, Heads: 4, Context: 32, Vocab: 50}
	specs := paramSpecs(cfg)
	vals := initValues(cfg, 7)
	seen := map[string]bool{}
	for i, s := range specs {
		if seen[s.Name] {
			t.Errorf("parameter %s appears twice", s.Name)
		}
		seen[s.Name] = true
		if s.Decay != (len(s.Shape) == 2) {
			t.Errorf("%s (shape %v): decay %v; want decay on matrices only", s.Name, s.Shape, s.Decay)
		}
		v := vals[i]
		var sum, sq float64
		for _, x := range v {
			sum += x
			sq += x * x
		}
		mean, std := sum/float64(len(v)), math.Sqrt(sq/float64(len(v)))
		var wantMean, wantStd float64
		switch s.Init {
		case initNormal:
			wantStd = 0.02
		case initResidual:
			wantStd = 0.02 / math.Sqrt(6)
		case initOne:
			wantMean, wantStd = 1, 1
		}
		if math.Abs(mean-wantMean) > 0.1*max(wantStd, 0.01) || math.Abs(std-wantStd) > 0.1*wantStd {
			t.Errorf("%s: mean %.4f rms %.4f; want %.4f, %.4f", s.Name, mean, std, wantMean, wantStd)
		}
	}
	again := initValues(cfg, 7)
	other := initValues(cfg, 8)
	if again[0][5] != vals[0][5] || other[0][5] == vals[0][5] {
		t.Error("initValues is not a function of the seed")
	}
}

func TestTrainConfig(t *testing.T) {
	c := DefaultTrainConfig()
	if err := c.Validate(); err != nil {
		t.Fatalf("DefaultTrainConfig().Validate() = %v", err)
	}
	bad := c
	bad.MinLR, bad.Beta2, bad.Bucket = 1, 1, 0
	err := bad.Validate()
	for _, f := range []string{"min_lr", "beta2", "bucket"} {
		if err == nil || !strings.Contains(err.Error(), "dragon: "+f+": ") {
			t.Errorf("Validate() = %v; want an error naming %s", err, f)
		}
	}
	c.Steps, c.Warmup, c.LR, c.MinLR = 101, 10, 1, 0.1
	tests := []struct {
		step int
		want float64
	}{
		{0, 0.1}, {4, 0.5}, {9, 1}, {10, 1}, {55, 0.55}, {100, 0.1}, {200, 0.1},
	}
	for _, tt := range tests {
		if got := c.LRAt(tt.step); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("LRAt(%d) = %v; want %v", tt.step, got, tt.want)
		}
	}
	for s := 11; s < 101; s++ {
		if c.LRAt(s) > c.LRAt(s-1) {
			t.Errorf("LRAt(%d) = %v rises after warmup (LRAt(%d) = %v)", s, c.LRAt(s), s-1, c.LRAt(s-1))
		}
	}
}
