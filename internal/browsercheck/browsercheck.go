// Package browsercheck loads an HTML page in headless chromium (driven
// through the DevTools protocol by chromedp) and reports what a reader
// would see go wrong: console errors and uncaught exceptions, images that
// did not load, the number of tables, and whether a screenshot of the page
// is blank. The tests of the HTML report use it (reports, and the report of
// the smoke run); `make setup` installs Debian's chromium for it.
package browsercheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"image"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"
)

// browsers are the names Find looks for on PATH, in order: Debian's
// package, other distributions' name for it, Google's builds.
var browsers = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"}

// ErrNotFound is the error of Find when no chromium is installed.
var ErrNotFound = errors.New("chromium not installed: run make setup (it installs Debian's chromium; or apt-get install chromium)")

// Find returns the path of a chromium or Chrome on PATH, or an error
// wrapping ErrNotFound that says how to install one.
func Find() (string, error) {
	for _, name := range browsers {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w; looked on PATH for %s", ErrNotFound, strings.Join(browsers, ", "))
}

// Result is what a page showed in the browser.
type Result struct {
	// URL is the file:// URL loaded.
	URL string
	// Title is the page's title.
	Title string
	// Console has every console message of the page, "type: text".
	Console []string
	// Errors are the console errors (console.error, errors of the browser
	// log such as a resource that failed to load or a Content-Security-
	// Policy violation) and uncaught exceptions, "type: text".
	Errors []string
	// Images has each <img> of the page, in document order.
	Images []Image
	// Tables is the number of <table> elements.
	Tables int
	// Marks has each element the page marks with a data-check attribute
	// (its value names it), in document order, where it was laid out.
	Marks []Mark
	// ViewportHeight is the height of the browser window's first screen
	// in CSS pixels.
	ViewportHeight float64
	// PageWidth and ViewportWidth are the document's scroll width and the
	// window's width: a page wider than its window makes the reader
	// scroll sideways (a value that does not wrap).
	PageWidth, ViewportWidth float64
	// Screenshot describes the screenshot of the whole page.
	Screenshot Screenshot
}

// Image is one <img> of a page after it loaded or failed.
type Image struct {
	// Src is the image's source, cut to 80 characters (data: URIs are long).
	Src string
	Alt string
	// Complete is the browser's img.complete: loading has ended (with the
	// image or with an error).
	Complete bool
	// NaturalWidth and NaturalHeight are the decoded image's size in CSS
	// pixels; zero when it did not load.
	NaturalWidth, NaturalHeight int
}

// Mark is the layout box of an element marked data-check="NAME", in CSS
// pixels from the top of the page.
type Mark struct {
	Name        string
	Top, Bottom float64
}

// Mark returns the first mark named name.
func (r *Result) Mark(name string) (Mark, bool) {
	for _, m := range r.Marks {
		if m.Name == name {
			return m, true
		}
	}
	return Mark{}, false
}

// Loaded reports whether the image loaded with a non-zero size.
func (im Image) Loaded() bool {
	return im.Complete && im.NaturalWidth > 0 && im.NaturalHeight > 0
}

// Screenshot describes a PNG screenshot.
type Screenshot struct {
	Width, Height int
	// Colors is the number of distinct colours, counted up to maxColors.
	Colors int
	// LumaVariance is the variance of the pixels' luma (0-255 scale).
	LumaVariance float64
	// NonBlank is Colors > 1 and LumaVariance > minVariance: something was
	// drawn on the background.
	NonBlank bool
}

const (
	// maxColors caps the colour count: beyond it the page is plainly not
	// blank, and the set stays small.
	maxColors = 1 << 16
	// minVariance is the luma variance above which a screenshot is not
	// blank: one line of dark text on a white 1200x900 page gives about
	// 100 and more; a uniform page gives 0, and the faint noise of image
	// scaling stays far below 1.
	minVariance = 1.0
	// viewport is the browser window's size in CSS pixels.
	viewportW, viewportH = 1200, 900
)

// Problems lists what a reader would see go wrong on the page: each
// console error or exception, each image that did not load or has a zero
// size, and a blank screenshot. The number of tables is the caller's to
// judge.
func (r *Result) Problems() []string {
	var p []string
	p = append(p, r.Errors...)
	for i, im := range r.Images {
		if !im.Loaded() {
			p = append(p, fmt.Sprintf("image %d (alt %q, src %q) did not load: complete=%v, natural size %dx%d",
				i, im.Alt, im.Src, im.Complete, im.NaturalWidth, im.NaturalHeight))
		}
	}
	if !r.Screenshot.NonBlank {
		p = append(p, fmt.Sprintf("the screenshot is blank (%dx%d, %d colours, luma variance %.3g)",
			r.Screenshot.Width, r.Screenshot.Height, r.Screenshot.Colors, r.Screenshot.LumaVariance))
	}
	return p
}

// pageState is what the page's DOM says once its images have settled.
type pageState struct {
	Title          string  `json:"title"`
	Tables         int     `json:"tables"`
	Images         []Image `json:"images"`
	Marks          []Mark  `json:"marks"`
	ViewportHeight float64 `json:"viewportHeight"`
	ViewportWidth  float64 `json:"viewportWidth"`
	PageWidth      float64 `json:"pageWidth"`
}

// stateJS waits for every image to load or fail, then reads the page. It
// runs through the DevTools protocol, which a page's Content-Security-
// Policy does not restrict.
const stateJS = `(async () => {
  const imgs = Array.from(document.images);
  await Promise.all(imgs.map(im => im.complete ? null : new Promise(r => {
    im.addEventListener('load', r, {once: true});
    im.addEventListener('error', r, {once: true});
  })));
  return {
    title: document.title,
    tables: document.getElementsByTagName('table').length,
    marks: Array.from(document.querySelectorAll('[data-check]')).map(el => {
      const r = el.getBoundingClientRect();
      return {Name: el.dataset.check, Top: r.top + window.scrollY, Bottom: r.bottom + window.scrollY};
    }),
    viewportHeight: window.innerHeight,
    viewportWidth: document.documentElement.clientWidth,
    pageWidth: document.documentElement.scrollWidth,
    images: imgs.map(im => ({
      Src: (im.getAttribute('src') || '').slice(0, 80),
      Alt: im.alt,
      Complete: im.complete,
      NaturalWidth: im.naturalWidth,
      NaturalHeight: im.naturalHeight,
    })),
  };
})()`

// Check loads the HTML file at htmlPath in headless chromium, waits for its
// images, and returns what it showed. When screenshotPath is not empty the
// PNG screenshot of the whole page is written there. Check returns an error
// only when it could not look (no chromium, the browser failed, the page
// did not load); what went wrong on the page is in the Result (Problems).
//
// The browser runs with --no-sandbox: chromium's sandbox cannot start as
// root in a container, and the page is a local file of ours.
func Check(ctx context.Context, htmlPath, screenshotPath string) (*Result, error) {
	exe, err := Find()
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(htmlPath)
	if err != nil {
		return nil, fmt.Errorf("browsercheck: %w", err)
	}
	if _, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("browsercheck: %w", err)
	}
	profile, err := os.MkdirTemp("", "browsercheck-profile-")
	if err != nil {
		return nil, fmt.Errorf("browsercheck: %w", err)
	}
	defer os.RemoveAll(profile)

	var stderr syncBuffer
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(viewportW, viewportH),
		chromedp.CombinedOutput(&stderr),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancel := chromedp.NewContext(allocCtx)
	defer cancel()

	u := (&url.URL{Scheme: "file", Path: filepath.ToSlash(abs)}).String()
	res := &Result{URL: u}

	// Start the browser first, on its own: a context whose start failed
	// must not be used again (chromedp v0.23.1 then allocates a second time
	// and panics closing a closed channel in its allocator's goroutine).
	if err := chromedp.Do(bctx); err != nil {
		err = fmt.Errorf("browsercheck: start %s: %w", exe, err)
		if out := lastLines(stderr.String(), 5); out != "" && !strings.Contains(err.Error(), out) {
			err = fmt.Errorf("%w (browser output: %s)", err, out)
		}
		return nil, err
	}
	// Collect the console from before the navigation until a sentinel
	// message written after the last action: the iterator keeps the order
	// of the messages, so every message of the page comes before it.
	sentinel := fmt.Sprintf("browsercheck: end of %p", res)
	messages := chromedp.Console(bctx)
	var console []chromedp.ConsoleMessage // the goroutine's until done
	done := make(chan error, 1)
	go func() {
		for m, err := range messages {
			if err != nil {
				done <- err
				return
			}
			if m.Text == sentinel {
				done <- nil
				return
			}
			console = append(console, m)
		}
		done <- errors.New("console closed before the end")
	}()

	if err := chromedp.Do(bctx, chromedp.Navigate(u)); err != nil {
		return nil, fmt.Errorf("browsercheck: load %s: %w", u, err)
	}
	st, err := chromedp.Run(bctx, chromedp.Evaluate[pageState](stateJS, chromedp.EvalAwaitPromise))
	if err != nil {
		return nil, fmt.Errorf("browsercheck: read the page %s: %w", u, err)
	}
	res.Title, res.Tables, res.Images, res.Marks = st.Title, st.Tables, st.Images, st.Marks
	res.ViewportHeight, res.ViewportWidth, res.PageWidth = st.ViewportHeight, st.ViewportWidth, st.PageWidth
	shot, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
	if err != nil {
		return nil, fmt.Errorf("browsercheck: screenshot of %s: %w", u, err)
	}
	if res.Screenshot, err = describePNG(shot); err != nil {
		return nil, fmt.Errorf("browsercheck: screenshot of %s: %w", u, err)
	}
	if screenshotPath != "" {
		if err := os.WriteFile(screenshotPath, shot, 0o644); err != nil {
			return nil, fmt.Errorf("browsercheck: %w", err)
		}
	}
	if err := chromedp.Do(bctx, chromedp.Evaluate[chromedp.Void](fmt.Sprintf("console.debug(%q)", sentinel))); err != nil {
		return nil, fmt.Errorf("browsercheck: %w", err)
	}
	select {
	case err := <-done:
		if err != nil {
			return nil, fmt.Errorf("browsercheck: reading the console of %s: %w", u, err)
		}
	case <-time.After(10 * time.Second):
		return nil, fmt.Errorf("browsercheck: the console of %s did not deliver the end marker within 10s", u)
	case <-ctx.Done():
		return nil, fmt.Errorf("browsercheck: %w", ctx.Err())
	}
	for _, m := range console {
		res.Console = append(res.Console, m.String())
		if m.Type == chromedp.ConsoleError || m.IsException() {
			res.Errors = append(res.Errors, m.String())
		}
	}
	return res, nil
}

// describePNG decodes a PNG and measures how much is drawn on it.
func describePNG(b []byte) (Screenshot, error) {
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		return Screenshot{}, fmt.Errorf("decode PNG: %w", err)
	}
	return describe(img), nil
}

// describe counts an image's distinct colours and its luma variance.
func describe(img image.Image) Screenshot {
	bnd := img.Bounds()
	s := Screenshot{Width: bnd.Dx(), Height: bnd.Dy()}
	if bnd.Empty() {
		return s
	}
	colors := make(map[uint64]struct{})
	luma := make([]float64, 0, bnd.Dx()*bnd.Dy())
	var sum float64
	for y := bnd.Min.Y; y < bnd.Max.Y; y++ {
		for x := bnd.Min.X; x < bnd.Max.X; x++ {
			r, g, b, a := img.At(x, y).RGBA()
			if len(colors) < maxColors {
				colors[uint64(r)<<48|uint64(g)<<32|uint64(b)<<16|uint64(a)] = struct{}{}
			}
			l := (0.299*float64(r) + 0.587*float64(g) + 0.114*float64(b)) / 257
			luma = append(luma, l)
			sum += l
		}
	}
	// Two passes: exact zero for a uniform image.
	mean := sum / float64(len(luma))
	var ss float64
	for _, l := range luma {
		ss += (l - mean) * (l - mean)
	}
	s.Colors = len(colors)
	s.LumaVariance = ss / float64(len(luma))
	s.NonBlank = s.Colors > 1 && s.LumaVariance > minVariance
	return s
}

// syncBuffer is a bytes.Buffer safe for the browser's output goroutine to
// write while Check reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// lastLines returns the last n lines of s, joined by " | ".
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
