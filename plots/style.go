package plots

import (
	"fmt"
	"image/color"
	"math"
	"strings"

	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Style is the look of a figure: its size, its base font size and its
// colour palette. The zero Style is not valid; start from DefaultStyle.
type Style struct {
	Width, Height float64 // inches
	FontSize      float64 // points, for axis labels; titles are larger, ticks and legends smaller
	Palette       string  // "okabe-ito" (default) | "tol"
}

// DPI is the resolution of every Figure's PNG: a figure of Width inches is
// Width×DPI pixels wide (rounded to the nearest pixel).
const DPI = 150

// Limits on a Style. 20 in is 3000 px at DPI, 36 MB of RGBA pixels for a
// square figure while the PNG is drawn; a font above 72 pt leaves no room
// for data on a figure of any allowed size.
const (
	maxInches   = 20
	maxFontSize = 72
)

// DefaultStyle is a 6×4 in figure, 11 pt labels, Okabe-Ito colours.
func DefaultStyle() Style {
	return Style{Width: 6, Height: 4, FontSize: 11, Palette: PaletteOkabeIto}
}

// The palette names a Style accepts.
const (
	PaletteOkabeIto = "okabe-ito"
	PaletteTol      = "tol"
)

// palettes holds the series colours of each palette, in the order series
// take them.
//
// Okabe-Ito (Okabe & Ito 2008, "Color Universal Design") is distinguishable
// under the common colour-vision deficiencies. Its yellow is hard to see on
// white and its black is the axes' colour, so both come last.
//
// Paul Tol's "bright" qualitative scheme (personal.sron.nl/~pault) is the
// alternative; its grey comes last for the same reason.
var palettes = map[string][]color.RGBA{
	PaletteOkabeIto: {
		rgb(0x00, 0x72, 0xB2), // blue
		rgb(0xD5, 0x5E, 0x00), // vermillion
		rgb(0x00, 0x9E, 0x73), // bluish green
		rgb(0xE6, 0x9F, 0x00), // orange
		rgb(0xCC, 0x79, 0xA7), // reddish purple
		rgb(0x56, 0xB4, 0xE9), // sky blue
		rgb(0xF0, 0xE4, 0x42), // yellow
		rgb(0x00, 0x00, 0x00), // black
	},
	PaletteTol: {
		rgb(0x44, 0x77, 0xAA), // blue
		rgb(0xEE, 0x66, 0x77), // red
		rgb(0x22, 0x88, 0x33), // green
		rgb(0xCC, 0xBB, 0x44), // yellow
		rgb(0x66, 0xCC, 0xEE), // cyan
		rgb(0xAA, 0x33, 0x77), // purple
		rgb(0xBB, 0xBB, 0xBB), // grey
	},
}

// paletteNames is the allowed values of Style.Palette, for error messages.
var paletteNames = []string{PaletteOkabeIto, PaletteTol}

func rgb(r, g, b uint8) color.RGBA { return color.RGBA{R: r, G: g, B: b, A: 0xFF} }

// Validate reports the first field of s that cannot be drawn with: a size
// or font size that is not a positive finite number (or is too large), or a
// palette that is not one of "okabe-ito" and "tol".
func (s Style) Validate() error {
	if err := s.validate(); err != nil {
		return fmt.Errorf("plots: %w", err)
	}
	return nil
}

func (s Style) validate() error {
	for _, f := range []struct {
		name  string
		v     float64
		unit  string
		limit float64
	}{
		{"Width", s.Width, "in", maxInches},
		{"Height", s.Height, "in", maxInches},
		{"FontSize", s.FontSize, "pt", maxFontSize},
	} {
		if !(f.v > 0) || math.IsInf(f.v, 0) {
			return fmt.Errorf("style: %s is %g %s; it must be a positive number", f.name, f.v, f.unit)
		}
		if f.v > f.limit {
			return fmt.Errorf("style: %s is %g %s; at most %g %s is allowed", f.name, f.v, f.unit, f.limit, f.unit)
		}
	}
	if _, ok := palettes[s.Palette]; !ok {
		return fmt.Errorf("style: Palette %q is not known; allowed values: %s", s.Palette, quoteList(paletteNames))
	}
	return nil
}

func quoteList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// look is a validated Style turned into what the builders draw with.
type look struct {
	width, height vg.Length
	colors        []color.RGBA
	title         font.Font
	label         font.Font
	tick          font.Font
	legend        font.Font
}

// baseFont is the typeface of every text. Sans-serif reads better than
// gonum's default serif at figure sizes; Liberation ships inside gonum, so
// the PNG does not depend on the fonts installed on the machine.
var baseFont = font.Font{Typeface: "Liberation", Variant: "Sans"}

func (s Style) look() look {
	size := vg.Points(s.FontSize)
	return look{
		width:  vg.Length(s.Width) * vg.Inch,
		height: vg.Length(s.Height) * vg.Inch,
		colors: palettes[s.Palette],
		title:  font.From(baseFont, size*1.15),
		label:  font.From(baseFont, size),
		tick:   font.From(baseFont, size*0.85),
		legend: font.From(baseFont, size*0.85),
	}
}

// color is the colour of series i; past the palette's end colours repeat,
// and the series stays distinct by its dash pattern and glyph.
func (l look) color(i int) color.RGBA { return l.colors[i%len(l.colors)] }

// dashes are the line patterns of series, in order. Their count (5) is
// coprime with the palettes' sizes (7 and 8), so colour and dash together
// tell apart 35 or 40 series.
var dashes = [][]vg.Length{
	nil,
	{vg.Points(6), vg.Points(3)},
	{vg.Points(1.5), vg.Points(2)},
	{vg.Points(6), vg.Points(2), vg.Points(1.5), vg.Points(2)},
	{vg.Points(10), vg.Points(3)},
}

func dash(i int) []vg.Length { return dashes[i%len(dashes)] }

// glyphs are the point markers of series, in order (5 of them, like dashes).
var glyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{},
	draw.TriangleGlyph{},
	draw.SquareGlyph{},
	draw.PyramidGlyph{},
	draw.RingGlyph{},
}

func glyph(i int) draw.GlyphDrawer { return glyphs[i%len(glyphs)] }

// neutral is the colour of reference marks (the y=x diagonal, the speedup-1
// line): a grey that no palette uses for series.
var neutral = rgb(0x66, 0x66, 0x66)

// lineStyle is series i's line.
func (l look) lineStyle(i int) draw.LineStyle {
	return draw.LineStyle{Color: l.color(i), Width: vg.Points(1.5), Dashes: dash(i)}
}

// glyphStyle is series i's marker.
func (l look) glyphStyle(i int) draw.GlyphStyle {
	return draw.GlyphStyle{Color: l.color(i), Radius: vg.Points(3), Shape: glyph(i)}
}

// light is c mixed with white (share w of white), for bands and fills that
// must not hide the lines drawn over them. An opaque mix, not alpha, so SVG
// and PNG agree exactly.
func light(c color.RGBA, w float64) color.RGBA {
	mix := func(v uint8) uint8 { return uint8(math.Round(float64(v)*(1-w) + 255*w)) }
	return color.RGBA{R: mix(c.R), G: mix(c.G), B: mix(c.B), A: 0xFF}
}
