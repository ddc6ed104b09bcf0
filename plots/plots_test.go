package plots

import (
	"bytes"
	"encoding/xml"
	"errors"

	"flag"
	"fmt"
	"image"
	"image/color"
	_ "image/png" // registers the decoder
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

var outDir = flag.String("plots.out", "", "write the test figures to this directory (default: the test's temporary directory)")

// Small data, made by formula so every run draws the same figures.

func lossData() (train, val []Series) {
	var x, y, vx, vy []float64
	for i := 1; i <= 40; i++ {
		x = append(x, float64(i))
		y = append(y, 2+6*math.Exp(-float64(i)/8))
		if i%10 == 0 {
			vx = append(vx, float64(i))
			vy = append(vy, 2.3+6*math.Exp(-float64(i)/8))
		}
	}
	return []Series{{Name: "sft", X: x, Y: y}}, []Series{{Name: "sft", X: vx, Y: vy}}
}

func rlData() (steps, reward, std, correct, kl []float64) {
	for i := 1; i <= 20; i++ {
		f := float64(i)
		steps = append(steps, f)
		reward = append(reward, -1+f/20)
		std = append(std, 0.5-f/50)
		correct = append(correct, f/25)
		kl = append(kl, f*f/4000)
	}
	return
}

func speedups(n int, scale float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = scale * math.Pow(2, math.Sin(float64(i)*1.7)*2)
	}
	return out
}

func cdfData() []Series {
	return []Series{
		{Name: "sft", X: speedups(30, 0.9)},
		{Name: "rl", X: speedups(25, 1.3)},
		{Name: "baseline:random", X: speedups(20, 0.5)},
	}
}

// rlRunsData is two runs' RL curves, the second with fewer steps.
func rlRunsData() (reward, correct []Series) {
	steps, rw, _, cr, _ := rlData()
	names := []string{"3f2a91c04e1b paper.hcl", "9c01d2e3f4a5 paper.hcl bonus_scale=2"}
	for i, n := range names {
		k := len(steps) - 5*i
		shift := make([]float64, k)
		for j := range shift {
			shift[j] = rw[j] + 0.1*float64(i)
		}
		reward = append(reward, Series{Name: n, X: steps[:k], Y: shift})
		correct = append(correct, Series{Name: n, X: steps[:k], Y: cr[:k]})
	}
	return reward, correct
}

func pairData() []Pair {
	inf := math.Inf(1)
	return []Pair{
		{"a", 12, 10}, {"b", 30, 45}, {"c", 5.5, 5.5}, {"d", 100, 60},
		{"e", inf, 20}, {"f", 8, inf}, {"g", inf, inf}, {"h", 250, 180},
	}
}

func barData() []Bar {
	var out []Bar
	for i, fam := range []string{"C2D", "DENSE", "GMM", "POOL"} {
		for j, pol := range []string{"sft", "rl", "baseline:random"} {
			out = append(out, Bar{Group: fam, Series: pol, Value: float64((i+1)*(j+2)%7) / 7, N: 40})
		}
	}
	return out
}

func datasetData() Dataset {
	var lens []float64
	for i := range 200 {
		lens = append(lens, 100+float64(i*i%530))
	}
	return Dataset{TraceLens: lens, TraceUnit: "tokens", RefineSpeedups: speedups(150, 2), Source: "model:h100"}
}

// builderCase is one figure drawn from small data, with the texts its SVG
// must hold.
type builderCase struct {
	name   string
	build  func(Style) (*Figure, error)
	title  string
	labels []string
}

// networkSearch and networkPolicies are a network's search curve and two
// policies' best-of-k points.
func networkSearch() Series {
	return Series{Name: "search", X: []float64{1152, 4608, 18000}, Y: []float64{5200, 4100, 3900}}
}

func networkPolicies() []Series {
	return []Series{
		{Name: "rl (grammar+gpu_limits)", X: []float64{18, 72, 144}, Y: []float64{6100, 4500, 4300}},
		{Name: "sft (grammar+gpu_limits)", X: []float64{18, 72, 144}, Y: []float64{7000, 5000, 4700}},
	}
}

func builderCases() []builderCase {
	train, val := lossData()
	steps, reward, std, correct, kl := rlData()
	return []builderCase{
		{
			name:   "loss_curves",
			build:  func(st Style) (*Figure, error) { return LossCurves(train, val, st) },
			title:  "Training and validation loss",
			labels: []string{"step", "loss (nats/token)", "training", "validation"},
		},
		{
			name: "rl_curves",
			build: func(st Style) (*Figure, error) {
				return RLCurves(steps, reward, std, correct, kl, st)
			},
			title:  "RL training curves",
			labels: []string{"step", "reward (mean ± one std)", "correct rate (share of samples)", "KL to reference (nats)"},
		},
		{
			name: "rl_runs",
			build: func(st Style) (*Figure, error) {
				r, c := rlRunsData()
				return RLRuns(r, c, st)
			},
			title:  "RL training curves by run",
			labels: []string{"step", "reward (mean)", "correct rate (share of samples)", "3f2a91c04e1b paper.hcl", "9c01d2e3f4a5 paper.hcl bonus_scale=2"},
		},
		{
			name:  "speedup_cdf",
			build: func(st Style) (*Figure, error) { return SpeedupCDF(cdfData(), "model:h100", st) },
			title: "Speedup over baseline: empirical CDF",
			labels: []string{"speedup over baseline (model:h100, simulated)", "fraction of values ≤ x",
				"sft (n=30)", "rl (n=25)", "baseline:random (n=20)", "speedup 1 (baseline)"},
		},
		{
			name:  "family_correctness",
			build: func(st Style) (*Figure, error) { return FamilyCorrectness(barData(), st) },
			title: "Correct rate per kernel family",
			labels: []string{"kernel family", "correct rate (share of attempts)", "sft", "rl",
				"baseline:random", "C2D", "n=40"},
		},
		{
			name: "latency_scatter",
			build: func(st Style) (*Figure, error) {
				return LatencyScatter(pairData(), "sft", "rl", "model:h100", st)
			},
			title: "Per-task latency: rl vs sft",
			labels: []string{"sft latency, µs (model:h100, simulated)", "rl latency, µs (model:h100, simulated)",
				"both correct: 5", "no correct attempt: 3", "y = x (equal latency)"},
		},
		{
			name: "network_latency",
			build: func(st Style) (*Figure, error) {
				return NetworkLatency("resnet-18 (batch=1,r=224)", networkSearch(), networkPolicies(), "model:h100", st)
			},
			title: "Network latency: resnet-18 (batch=1,r=224)",
			labels: []string{"measured trials (all subgraphs)", "network latency, µs (model:h100, simulated)",
				"search", "rl (grammar+gpu_limits)", "the search's best"},
		},
		{
			name:   "dataset_stats",
			build:  func(st Style) (*Figure, error) { return DatasetStatsOf(datasetData(), st) },
			title:  "Dataset statistics",
			labels: []string{"trace length (tokens)", "traces", "refinement speedup (model:h100, simulated)", "pairs"},
		},
	}
}

// svgText is the character data of every element of an SVG document, one
// string per element, or an error if it is not well-formed XML.
func svgText(doc []byte) ([]string, error) {
	d := xml.NewDecoder(bytes.NewReader(doc))
	var texts []string
	var root string
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = tok.Name.Local
			}
		case xml.CharData:
			if s := strings.TrimSpace(string(tok)); s != "" {
				texts = append(texts, s)
			}
		}
	}
	if root != "svg" {
		return nil, fmt.Errorf("root element is %q, want svg", root)
	}
	return texts, nil
}

// svgSize is the width and height of an SVG document's root, in points.
func svgSize(doc []byte) (w, h float64, err error) {
	var root struct {
		Width  string `xml:"width,attr"`
		Height string `xml:"height,attr"`
	}
	if err := xml.Unmarshal(doc, &root); err != nil {
		return 0, 0, err
	}
	parse := func(v string) (float64, error) {
		n, ok := strings.CutSuffix(v, "pt")
		if !ok {
			return 0, fmt.Errorf("SVG size %q is not in points", v)
		}
		return strconv.ParseFloat(n, 64)
	}
	if w, err = parse(root.Width); err != nil {
		return 0, 0, err
	}
	h, err = parse(root.Height)
	return w, h, err
}

func figureDir(t *testing.T) string {
	t.Helper()
	if *outDir != "" {
		if err := os.MkdirAll(*outDir, 0o755); err != nil {
			t.Fatal(err)
		}
		return *outDir
	}
	return t.TempDir()
}

func writeFigure(t *testing.T, dir string, f *Figure) {
	t.Helper()
	for ext, b := range map[string][]byte{".svg": f.SVG, ".png": f.PNG} {
		if err := os.WriteFile(filepath.Join(dir, f.Name+ext), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// checkPNG decodes a figure's PNG and checks its size and that data were
// drawn: pixels of the palette's first colour, and several colours in all.
func checkPNG(t *testing.T, f *Figure, st Style) {
	t.Helper()
	checkPNGColors(t, f, st, true)
}

// checkPNGColors is checkPNG; first says whether the palette's first
// colour must be drawn.
func checkPNGColors(t *testing.T, f *Figure, st Style, first bool) {
	t.Helper()
	img, format, err := image.Decode(bytes.NewReader(f.PNG))
	if err != nil {
		t.Fatalf("%s: PNG does not decode: %v", f.Name, err)
	}
	if format != "png" {
		t.Errorf("%s: image format %q, want png", f.Name, format)
	}
	wantW, wantH := int(math.Round(st.Width*DPI)), int(math.Round(st.Height*DPI))
	if b := img.Bounds(); b.Dx() != wantW || b.Dy() != wantH {
		t.Errorf("%s: PNG is %dx%d px, want %dx%d (%gx%g in at %d dpi)", f.Name, b.Dx(), b.Dy(), wantW, wantH, st.Width, st.Height, DPI)
	}
	c0 := palettes[st.Palette][0]
	colors := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			colors[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), uint8(a >> 8)}]++
		}
	}
	if first && colors[c0] < 20 {
		t.Errorf("%s: %d pixels of the palette's first colour %v, want at least 20 (is the data drawn?)", f.Name, colors[c0], c0)
	}
	if len(colors) < 10 {
		t.Errorf("%s: %d distinct colours in the PNG, want at least 10 (blank figure?)", f.Name, len(colors))
	}
}

func TestBuilders(t *testing.T) {
	dir := figureDir(t)
	styles := map[string]Style{}
	for _, palette := range paletteNames {
		st := DefaultStyle()
		st.Palette = palette
		styles[palette] = st
	}
	// A small figure with small type, in a size that is not a whole number
	// of inches: 675×465 px.
	styles["small"] = Style{Width: 4.5, Height: 3.1, FontSize: 8, Palette: PaletteOkabeIto}
	for _, sname := range []string{PaletteOkabeIto, PaletteTol, "small"} {
		st := styles[sname]
		palette := st.Palette
		for _, c := range builderCases() {
			t.Run(sname+"/"+c.name, func(t *testing.T) {
				f, err := c.build(st)
				if err != nil {
					t.Fatalf("%s: %v", c.name, err)
				}
				if f.Name != c.name {
					t.Errorf("Name = %q, want %q", f.Name, c.name)
				}
				if f.Title != c.title {
					t.Errorf("Title = %q, want %q", f.Title, c.title)
				}
				if f.Caption == "" {
					t.Errorf("%s: empty caption", c.name)
				}
				texts, err := svgText(f.SVG)
				if err != nil {
					t.Fatalf("%s: SVG does not parse: %v", c.name, err)
				}
				for _, want := range append([]string{c.title}, c.labels...) {
					found := false
					for _, s := range texts {
						if strings.Contains(s, want) {
							found = true
							break
						}
					}
					if !found {
						t.Errorf("%s: SVG has no text %q; texts: %q", c.name, want, texts)
					}
				}
				w, h, err := svgSize(f.SVG)
				if err != nil {
					t.Errorf("%s: %v", c.name, err)
				} else if math.Abs(w-st.Width*72) > 0.01 || math.Abs(h-st.Height*72) > 0.01 {
					t.Errorf("%s: SVG is %gx%g pt, want %gx%g", c.name, w, h, st.Width*72, st.Height*72)
				}
				if !bytes.Contains(f.SVG, []byte(svgFontFallback)) || bytes.Contains(f.SVG, []byte(svgFont)) {
					t.Errorf("%s: SVG text does not fall back to fonts with Liberation Sans' metrics (%s)", c.name, svgFontFallback)
				}
				hex := fmt.Sprintf("#%02X%02X%02X", palettes[palette][0].R, palettes[palette][0].G, palettes[palette][0].B)
				if !bytes.Contains(f.SVG, []byte(hex)) {
					t.Errorf("%s: SVG never uses the %s palette's first colour %s", c.name, palette, hex)
				}
				checkPNG(t, f, st)
				if sname == PaletteOkabeIto {
					writeFigure(t, dir, f)
				}
				if sname == "small" && *outDir != "" {
					f.Name = "small_" + f.Name
					writeFigure(t, dir, f)
				}
			})
		}
	}
}

// TestDeterministic draws every figure twice, in both palettes, and wants
// the same bytes.
func TestDeterministic(t *testing.T) {
	for _, palette := range paletteNames {
		st := DefaultStyle()
		st.Palette = palette
		for _, c := range builderCases() {
			a, err := c.build(st)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			b, err := c.build(st)
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if !bytes.Equal(a.SVG, b.SVG) {
				t.Errorf("%s (%s): two SVGs of the same data differ", c.name, palette)
			}
			if !bytes.Equal(a.PNG, b.PNG) {
				t.Errorf("%s (%s): two PNGs of the same data differ", c.name, palette)
			}
			if a.Caption != b.Caption {
				t.Errorf("%s (%s): captions differ: %q, %q", c.name, palette, a.Caption, b.Caption)
			}
		}
	}
}

// TestStyleChangesBytes: the style is part of the picture (a cache key
// built on it is not vacuous).
func TestStyleChangesBytes(t *testing.T) {
	base := DefaultStyle()
	variants := map[string]Style{}
	for name, f := range map[string]func(*Style){
		"width":   func(s *Style) { s.Width = 7 },
		"height":  func(s *Style) { s.Height = 5 },
		"font":    func(s *Style) { s.FontSize = 9 },
		"palette": func(s *Style) { s.Palette = PaletteTol },
	} {
		st := base
		f(&st)
		variants[name] = st
	}
	c := builderCases()[2] // speedup_cdf
	ref, err := c.build(base)
	if err != nil {
		t.Fatal(err)
	}
	for name, st := range variants {
		f, err := c.build(st)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if bytes.Equal(f.SVG, ref.SVG) {
			t.Errorf("changing the style's %s leaves the SVG unchanged", name)
		}
		if bytes.Equal(f.PNG, ref.PNG) {
			t.Errorf("changing the style's %s leaves the PNG unchanged", name)
		}
	}
}

func TestStyleValidate(t *testing.T) {
	for _, c := range []struct {
		name string
		edit func(*Style)
		want []string // substrings of the error; nil: valid
	}{
		{"default", func(*Style) {}, nil},
		{"tol", func(s *Style) { s.Palette = PaletteTol }, nil},
		{"zero width", func(s *Style) { s.Width = 0 }, []string{"Width", "positive"}},
		{"negative height", func(s *Style) { s.Height = -4 }, []string{"Height", "positive"}},
		{"NaN font", func(s *Style) { s.FontSize = math.NaN() }, []string{"FontSize", "positive"}},
		{"infinite width", func(s *Style) { s.Width = math.Inf(1) }, []string{"Width"}},
		{"huge width", func(s *Style) { s.Width = 1000 }, []string{"Width", "at most 20"}},
		{"huge font", func(s *Style) { s.FontSize = 200 }, []string{"FontSize", "at most 72"}},
		{"unknown palette", func(s *Style) { s.Palette = "viridis" }, []string{"Palette", `"viridis"`, `"okabe-ito"`, `"tol"`}},
		{"empty palette", func(s *Style) { s.Palette = "" }, []string{"Palette", `"okabe-ito"`, `"tol"`}},
		{"zero style", func(s *Style) { *s = Style{} }, []string{"Width"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := DefaultStyle()
			c.edit(&st)
			err := st.Validate()
			if c.want == nil {
				if err != nil {
					t.Fatalf("Validate(%+v) = %v, want nil", st, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%+v) = nil, want an error with %q", st, c.want)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("Validate(%+v) = %q; want it to contain %q", st, err, w)
				}
			}
		})
	}
}

func TestDefaultStyle(t *testing.T) {
	if got, want := DefaultStyle(), (Style{Width: 6, Height: 4, FontSize: 11, Palette: "okabe-ito"}); got != want {
		t.Errorf("DefaultStyle() = %+v, want %+v", got, want)
	}
}

// TestErrors: bad data and a bad style are refused with an *Error naming
// the figure and the cause.
func TestErrors(t *testing.T) {
	st := DefaultStyle()
	bad := st
	bad.Palette = "rainbow"
	train, val := lossData()
	steps, reward, std, correct, kl := rlData()
	nan, inf := math.NaN(), math.Inf(1)
	for _, c := range []struct {
		name   string
		figure string
		build  func() (*Figure, error)
		want   string
	}{
		// loss_curves
		{"loss no series", "loss_curves", func() (*Figure, error) { return LossCurves(nil, nil, st) }, "no series"},
		{"loss empty series", "loss_curves", func() (*Figure, error) {
			return LossCurves([]Series{{Name: "sft"}}, nil, st)
		}, `training series "sft" is empty`},
		{"loss mismatched lengths", "loss_curves", func() (*Figure, error) {
			return LossCurves(train, []Series{{Name: "sft", X: []float64{1, 2}, Y: []float64{3}}}, st)
		}, "2 x values and 1 y values"},
		{"loss NaN", "loss_curves", func() (*Figure, error) {
			return LossCurves([]Series{{Name: "sft", X: []float64{1, 2}, Y: []float64{3, nan}}}, val, st)
		}, "y: value 1 is NaN"},
		{"loss no name", "loss_curves", func() (*Figure, error) {
			return LossCurves([]Series{{X: []float64{1}, Y: []float64{3}}}, nil, st)
		}, "no name"},
		{"loss twice", "loss_curves", func() (*Figure, error) { return LossCurves(append(train, train...), nil, st) }, "twice"},
		{"loss range overflows", "loss_curves", func() (*Figure, error) {
			return LossCurves([]Series{{Name: "sft", X: []float64{1, 2}, Y: []float64{-1e308, 1e308}}}, nil, st)
		}, "losses run from -1e+308 to 1e+308, a range too wide to draw"},
		{"loss gonum panics", "loss_curves", func() (*Figure, error) {
			// gonum widens a one-value axis by ±1, which 1e300 does not
			// notice, and its ticker panics: the panic comes back as an error.
			return LossCurves([]Series{{Name: "sft", X: []float64{1, 2}, Y: []float64{1e300, 1e300}}}, nil, st)
		}, "drawing failed: illegal range"},
		{"loss palette", "loss_curves", func() (*Figure, error) { return LossCurves(train, val, bad) }, `Palette "rainbow"`},
		// rl_runs
		{"rl runs none", "rl_runs", func() (*Figure, error) { return RLRuns(nil, nil, st) }, "no runs"},
		{"rl runs unpaired", "rl_runs", func() (*Figure, error) {
			r, c := rlRunsData()
			return RLRuns(r, c[:1], st)
		}, "2 reward series and 1 correct-rate series"},
		{"rl runs rate above 1", "rl_runs", func() (*Figure, error) {
			r, c := rlRunsData()
			c[1].Y = append([]float64{1.5}, c[1].Y[1:]...)
			return RLRuns(r, c, st)
		}, "[0, 1]"},
		{"rl runs other order", "rl_runs", func() (*Figure, error) {
			r, c := rlRunsData()
			c[0], c[1] = c[1], c[0]
			return RLRuns(r, c, st)
		}, "run 0 is"},
		// rl_curves
		{"rl no steps", "rl_curves", func() (*Figure, error) { return RLCurves(nil, nil, nil, nil, nil, st) }, "no steps"},
		{"rl mismatched lengths", "rl_curves", func() (*Figure, error) {
			return RLCurves(steps, reward[1:], std, correct, kl, st)
		}, "reward has 19 values for 20 steps"},
		{"rl NaN", "rl_curves", func() (*Figure, error) {
			k := append([]float64(nil), kl...)
			k[3] = nan
			return RLCurves(steps, reward, std, correct, k, st)
		}, "kl: value 3 is NaN"},
		{"rl rate above 1", "rl_curves", func() (*Figure, error) {
			c := append([]float64(nil), correct...)
			c[0] = 1.5
			return RLCurves(steps, reward, std, c, kl, st)
		}, "[0, 1]"},
		{"rl negative std", "rl_curves", func() (*Figure, error) {
			s := append([]float64(nil), std...)
			s[2] = -0.1
			return RLCurves(steps, reward, s, correct, kl, st)
		}, "reward std 2 is -0.1"},
		{"rl steps decrease", "rl_curves", func() (*Figure, error) {
			s := append([]float64(nil), steps...)
			s[5] = 1
			return RLCurves(s, reward, std, correct, kl, st)
		}, "steps must increase"},
		{"rl band overflows", "rl_curves", func() (*Figure, error) {
			return RLCurves([]float64{1}, []float64{1e308}, []float64{1e308}, []float64{0}, []float64{0}, st)
		}, "rewards (± std) run from 0 to +Inf"},
		{"rl palette", "rl_curves", func() (*Figure, error) { return RLCurves(steps, reward, std, correct, kl, bad) }, "Palette"},
		// speedup_cdf
		{"cdf no series", "speedup_cdf", func() (*Figure, error) { return SpeedupCDF(nil, "model:h100", st) }, "no series"},
		{"cdf empty series", "speedup_cdf", func() (*Figure, error) {
			return SpeedupCDF([]Series{{Name: "rl"}}, "model:h100", st)
		}, `series "rl" has no speedups`},
		{"cdf negative speedup", "speedup_cdf", func() (*Figure, error) {
			return SpeedupCDF([]Series{{Name: "rl", X: []float64{1.2, -0.5}}}, "model:h100", st)
		}, "speedup 1 is negative (-0.5)"},
		{"cdf zero speedup", "speedup_cdf", func() (*Figure, error) {
			return SpeedupCDF([]Series{{Name: "rl", X: []float64{0}}}, "model:h100", st)
		}, "speedup 0 is 0"},
		{"cdf NaN", "speedup_cdf", func() (*Figure, error) {
			return SpeedupCDF([]Series{{Name: "rl", X: []float64{nan}}}, "model:h100", st)
		}, "speedup 0 is NaN"},
		{"cdf Inf", "speedup_cdf", func() (*Figure, error) {
			return SpeedupCDF([]Series{{Name: "rl", X: []float64{inf}}}, "model:h100", st)
		}, "speedup 0 is +Inf"},
		{"cdf no source", "speedup_cdf", func() (*Figure, error) { return SpeedupCDF(cdfData(), "", st) }, "latency source is empty"},
		{"cdf palette", "speedup_cdf", func() (*Figure, error) { return SpeedupCDF(cdfData(), "model:h100", bad) }, "Palette"},
		// family_correctness
		{"bars none", "family_correctness", func() (*Figure, error) { return FamilyCorrectness(nil, st) }, "no bars"},
		{"bars NaN", "family_correctness", func() (*Figure, error) {
			return FamilyCorrectness([]Bar{{Group: "C2D", Series: "rl", Value: nan}}, st)
		}, "not a rate in [0, 1]"},
		{"bars above 1", "family_correctness", func() (*Figure, error) {
			return FamilyCorrectness([]Bar{{Group: "C2D", Series: "rl", Value: 1.2}}, st)
		}, "value 1.2 is not a rate"},
		{"bars negative N", "family_correctness", func() (*Figure, error) {
			return FamilyCorrectness([]Bar{{Group: "C2D", Series: "rl", Value: 0.5, N: -1}}, st)
		}, "N is -1"},
		{"bars duplicate", "family_correctness", func() (*Figure, error) {
			b := Bar{Group: "C2D", Series: "rl", Value: 0.5}
			return FamilyCorrectness([]Bar{b, b}, st)
		}, `group "C2D" has series "rl" twice`},
		{"bars no group", "family_correctness", func() (*Figure, error) {
			return FamilyCorrectness([]Bar{{Series: "rl", Value: 0.5}}, st)
		}, "no group"},
		{"bars palette", "family_correctness", func() (*Figure, error) { return FamilyCorrectness(barData(), bad) }, "Palette"},
		// network_latency
		{"network no source", "network_latency", func() (*Figure, error) {
			return NetworkLatency("resnet-18", networkSearch(), networkPolicies(), "", st)
		}, "latency source is empty"},
		{"network no name", "network_latency", func() (*Figure, error) {
			return NetworkLatency("", networkSearch(), networkPolicies(), "model:h100", st)
		}, "no network name"},
		{"network empty search", "network_latency", func() (*Figure, error) {
			return NetworkLatency("resnet-18", Series{Name: "search"}, nil, "model:h100", st)
		}, `series "search" is empty`},
		{"network zero latency", "network_latency", func() (*Figure, error) {
			return NetworkLatency("resnet-18", networkSearch(), []Series{{Name: "rl", X: []float64{18}, Y: []float64{0}}}, "model:h100", st)
		}, "above 0"},
		// latency_scatter
		{"scatter none", "latency_scatter", func() (*Figure, error) { return LatencyScatter(nil, "sft", "rl", "model:h100", st) }, "no pairs"},
		{"scatter NaN", "latency_scatter", func() (*Figure, error) {
			return LatencyScatter([]Pair{{"t0", 3, nan}}, "sft", "rl", "model:h100", st)
		}, "rl latency is NaN"},
		{"scatter negative", "latency_scatter", func() (*Figure, error) {
			return LatencyScatter([]Pair{{"t0", -3, 4}}, "sft", "rl", "model:h100", st)
		}, "sft latency is -3 µs"},
		{"scatter -Inf", "latency_scatter", func() (*Figure, error) {
			return LatencyScatter([]Pair{{"t0", math.Inf(-1), 4}}, "sft", "rl", "model:h100", st)
		}, "use +Inf for no correct attempt"},
		{"scatter no source", "latency_scatter", func() (*Figure, error) { return LatencyScatter(pairData(), "sft", "rl", "", st) }, "latency source is empty"},
		{"scatter no name", "latency_scatter", func() (*Figure, error) { return LatencyScatter(pairData(), "", "rl", "model:h100", st) }, "need a name"},
		{"scatter palette", "latency_scatter", func() (*Figure, error) { return LatencyScatter(pairData(), "sft", "rl", "model:h100", bad) }, "Palette"},
		// dataset_stats
		{"dataset no lengths", "dataset_stats", func() (*Figure, error) { return DatasetStats(nil, []float64{2}, st) }, "no trace lengths"},
		{"dataset no speedups", "dataset_stats", func() (*Figure, error) { return DatasetStats([]float64{3}, nil, st) }, "no refinement speedups"},
		{"dataset NaN length", "dataset_stats", func() (*Figure, error) { return DatasetStats([]float64{3, nan}, []float64{2}, st) }, "value 1 is NaN"},
		{"dataset negative length", "dataset_stats", func() (*Figure, error) { return DatasetStats([]float64{-3}, []float64{2}, st) }, "trace length 0 is negative"},
		{"dataset negative speedup", "dataset_stats", func() (*Figure, error) { return DatasetStats([]float64{3}, []float64{2, -1}, st) }, "speedup 1 is negative"},
		{"dataset no unit", "dataset_stats", func() (*Figure, error) {
			d := datasetData()
			d.TraceUnit = ""
			return DatasetStatsOf(d, st)
		}, "trace unit is empty"},
		{"dataset palette", "dataset_stats", func() (*Figure, error) { return DatasetStatsOf(datasetData(), bad) }, "Palette"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := buildWithin(t, 30*time.Second, c.build)
			if err == nil {
				t.Fatalf("got a figure %q, want an error containing %q", f.Name, c.want)
			}
			if f != nil {
				t.Errorf("got a figure and an error %v", err)
			}
			var fe *Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *plots.Error", err, err)
			}
			if fe.Figure != c.figure {
				t.Errorf("error names figure %q, want %q", fe.Figure, c.figure)
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, "plots: "+c.figure+": ") {
				t.Errorf("error %q does not start with %q", msg, "plots: "+c.figure+": ")
			}
			if !strings.Contains(msg, c.want) {
				t.Errorf("error %q does not contain %q", msg, c.want)
			}
		})
	}
}

// buildWithin runs build and fails the test if it has not returned within
// d: some data send gonum into an endless loop, which must be refused
// before drawing, not hang the caller.
func buildWithin(t *testing.T, d time.Duration, build func() (*Figure, error)) (*Figure, error) {
	t.Helper()
	type result struct {
		f   *Figure
		err error
	}
	done := make(chan result, 1)
	go func() {
		f, err := build()
		done <- result{f, err}
	}()
	select {
	case r := <-done:
		return r.f, r.err
	case <-time.After(d):
		t.Fatalf("no answer after %v (gonum looping?)", d)
		return nil, nil
	}
}
