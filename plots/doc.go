// Package plots draws the figures of the analysis stage with gonum/plot.
// Each builder is a function of plain data and a Style: it needs no
// pipeline, cache or files, and returns a Figure holding the same picture
// as SVG and as PNG (DPI dots per inch), a title and a one-line caption.
//
// # Figures
//
//   - LossCurves (loss_curves): training and validation loss per step, in
//     nats per token; Series of (step, loss), a run's two matched by Name
//     (one series of each kind is one run, whatever the names).
//   - RLCurves (rl_curves): three stacked panels sharing the step axis:
//     mean reward with a ± one std band, the correct rate, the KL to the
//     reference policy; one value per step in each slice (rewardStd may be
//     nil: no band).
//   - SpeedupCDF (speedup_cdf): the empirical CDF of speedups over the
//     baseline per Series (X holds the speedups), log x axis, a line at
//     speedup 1; takes the latency source.
//   - FamilyCorrectness (family_correctness): grouped bars of a rate in
//     [0, 1], one group per kernel family, one bar per policy; []Bar.
//   - LatencyScatter (latency_scatter): per-task latencies of two policies
//     on log-log axes with the y = x diagonal; []Pair in µs, +Inf for a task
//     with no correct attempt, drawn on a clamped edge and counted in the
//     legend; takes the latency source.
//   - DatasetStatsOf (dataset_stats): histograms of trace lengths (tokens
//     or instructions, as given) and of refinement speedups (log bins);
//     Dataset, with the latency source. DatasetStats is the same with
//     lengths in tokens and no source.
//
// # Conventions
//
// A figure whose data are latencies says where they come from in its axis
// label: "speedup over baseline (model:h100, simulated)". A "model:…"
// source is called simulated, a "measured:…" one measured, any other is
// written as given.
//
// Colours come from a colour-blind-safe palette, Okabe-Ito by default or
// Paul Tol's "bright" (Style.Palette "okabe-ito" or "tol"); series differ
// also in dash pattern or marker, so a figure reads in grey. A legend
// appears when a figure has several series (SpeedupCDF always has one, for
// the count of each series), in rows under the plot, never over the data. Crowded group labels of FamilyCorrectness are slanted.
//
// Bad data are refused, never drawn: empty series, NaN or infinite values
// (but +Inf latencies in a Pair), X and Y of different lengths, speedups
// and latencies at or below 0, rates outside [0, 1], and an invalid Style.
// The error is an *Error naming the figure.
//
// The same data and Style give the same bytes, SVG and PNG alike.
package plots
