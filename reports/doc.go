// Package reports renders an experiment's notebook and results into
// Markdown and into one self-contained HTML page.
//
// A Notebook is the record of one run of an experiment file: a header (the
// experiment, its scale, and which latencies in it are simulated by the GPU
// model rather than measured), then one cell per stage in plan order (its
// address, kind, status, cache key, duration, parameters, outputs and the
// tail of its log), then the Results that the analysis stage computed:
// sections of text, tables and figures.
//
// Markdown links figures as files (![caption](figDir/name.svg)); the HTML
// page embeds them as data: URIs and carries its CSS inline, so it opens
// from a file with no network: it names no external URL, and a
// Content-Security-Policy meta tag forbids every fetch but data: images.
// Everything taken from the notebook is escaped (html/template in HTML,
// backslash escapes and code spans in Markdown).
//
// Rendering is deterministic: the same notebook gives the same bytes.
//
// PaperFigures gives the numbers that the paper's abstract states, each
// with the phrase it is quoted from, for the tables that set the paper's
// numbers beside a run's own.
package reports
