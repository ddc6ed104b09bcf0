package plots

import (
	"bytes"
	"encoding/xml"

	"flag"
	"fmt"
	"image"
	"image/color"
	_ "image/png" // registers the decoder
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
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

func builderCases() []builderCase {
	train, val := lossData()
	steps, reward, std, correct, kl := rlData()
	return []builderCase{
		{
			name:   "loss_curves",
			build:  func(st Style) (*Figure, error) { return LossCurves(train, val, st) },
			title:  "Training and validation loss",
			labels: []string{"step", "loss (nats/token)", "sft train", "sft validation"},
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
	first := palettes[st.Palette][0]
	colors := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, a := img.At(x, y).RGBA()
			colors[color.RGBA{uint8(r >> 8), uint8(g >> 8), uint8(bl >> 8), uint8(a >> 8)}]++
		}
	}
	if colors[first] < 20 {
		t.Errorf("%s: %d pixels of the palette's first colour %v, want at least 20 (is the data drawn?)", f.Name, colors[first], first)
	}
	if len(colors) < 10 {
		t.Errorf("%s: %d distinct colours in the PNG, want at least 10 (blank figure?)", f.Name, len(colors))
	}
}

func TestBuilders(t *testing.T) {
	dir := figureDir(t)
	for _, palette := range paletteNames {
		st := DefaultStyle()
		st.Palette = palette
		for _, c := range builderCases() {
			t.Run(palette+"/"+c.name, func(t *testing.T) {
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
				wantSize := fmt.Sprintf(`width="%gpt" height="%gpt"`, st.Width*72, st.Height*72)
				if !bytes.Contains(f.SVG, []byte(wantSize)) {
					t.Errorf("%s: SVG does not declare its size %s", c.name, wantSize)
				}
				hex := fmt.Sprintf("#%02X%02X%02X", palettes[palette][0].R, palettes[palette][0].G, palettes[palette][0].B)
				if !bytes.Contains(f.SVG, []byte(hex)) {
					t.Errorf("%s: SVG never uses the %s palette's first colour %s", c.name, palette, hex)
				}
				checkPNG(t, f, st)
				if palette == PaletteOkabeIto {
					writeFigure(t, dir, f)
				}
			})
		}
	}
}
