package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"dragonx/kernels/encode"
	"dragonx/kernels/trace"
	"dragonx/kernels/vocab"
)

var cmdEncode = &command{
	name:  "encode",
	usage: "encode -workload W.json -trace T.json [-kernel] [-tokens]",
	short: "write a trace as a compact script (or a workload as kernel text)",
	long: `Encode writes the compact, lossless text forms the language model reads and
writes (docs/encoding.md). The workload is selected as for kernel show
(-workload FILE, -spec JSON, or -family F -shape I).

  encode -workload W.json -trace T.json   the script text of the trace (TVM's
                                          JSON, - for standard input)
  encode -workload W.json -kernel         the kernel text of the workload
  ... -tokens                             token ids (kernels/vocab), one line,
                                          instead of the text

The script leaves out the postprocessors' part (decode reruns them), names
random variables by position and inlines each sampling decision where it is
used. Encode checks the round trip: a trace the script cannot carry exactly
(RV names other than TVM's numbering, a postprocessors' part other than what
the CUDA postprocessors write, a trace that does not replay) is refused, exit
status 1, with the reason.
`,
	run: runEncode,
}

var cmdDecode = &command{
	name:  "decode",
	usage: "decode -workload W.json -script S [-tokens]",
	short: "rebuild the exact trace of a compact script",
	long: `Decode replays a script (docs/encoding.md) on the workload, reruns the CUDA
postprocessors after a final EnterPostproc, and prints the trace in TVM's
compact JSON, one line: byte for byte the trace the script was encoded from.
The workload is selected as for kernel show (-workload FILE, -spec JSON, or
-family F -shape I); -script names the script file (- for standard input).

  decode -workload W.json -script S       the script as text
  decode -workload W.json -script S -tokens
                                          the script as token ids (as encode
                                          -tokens prints them)

A script that does not parse or replay, or is not the canonical script of the
trace it gives, is refused, exit status 1, with its line and the reason.
`,
	run: runDecode,
}

// maxScriptBytes bounds the script file read.
const maxScriptBytes = 1 << 22

// readArg reads the file named by a flag, - for standard input.
func readArg(e *env, path string, limit int64) ([]byte, error) {
	var data []byte
	var err error
	if path == "-" {
		data, err = io.ReadAll(io.LimitReader(e.stdin, limit+1))
	} else {
		data, err = readLimited(path, limit+1)
	}
	if err == nil && int64(len(data)) > limit {
		err = fmt.Errorf("%s: larger than %d bytes", path, limit)
	}
	return data, err
}

func runEncode(ctx context.Context, e *env, args []string) error {
	var w workloadFlags
	var tracePath string
	var kernel, tokens bool
	fs := newFlagSet("encode")
	w.register(fs)
	fs.StringVar(&tracePath, "trace", "", "trace `FILE` (TVM's JSON; - for standard input)")
	fs.BoolVar(&kernel, "kernel", false, "print the workload's kernel text instead of a script")
	fs.BoolVar(&tokens, "tokens", false, "print token ids instead of the text")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("encode takes no arguments besides flags, got %q", pos[0])
	}
	if kernel == (tracePath != "") {
		return usagef("encode needs -trace FILE, or -kernel (not both)")
	}
	if tracePath == "-" && w.file == "-" {
		return usagef("-workload and -trace cannot both read standard input")
	}
	spec, err := w.load(e)
	if err != nil {
		return err
	}
	f, err := spec.Build()
	if err != nil {
		return err
	}
	var text []byte
	if kernel {
		text, err = encode.Kernel(f)
	} else {
		var data []byte
		if data, err = readArg(e, tracePath, maxTraceBytes); err != nil {
			return err
		}
		var tr *trace.Trace
		if tr, err = trace.Parse(data); err != nil {
			return fmt.Errorf("%s: %w", tracePath, err)
		}
		text, err = encode.Lossless(ctx, f, tr, encode.Options{})
	}
	if err != nil {
		return err
	}
	if !tokens {
		_, err = e.stdout.Write(text)
		return err
	}
	v, err := vocab.Default()
	if err != nil {
		return err
	}
	ids, err := v.Encode(string(text))
	if err != nil {
		return err
	}
	var b strings.Builder
	for i, id := range ids {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(id))
	}
	b.WriteByte('\n')
	_, err = io.WriteString(e.stdout, b.String())
	return err
}

func runDecode(ctx context.Context, e *env, args []string) error {
	var w workloadFlags
	var scriptPath string
	var tokens bool
	fs := newFlagSet("decode")
	w.register(fs)
	fs.StringVar(&scriptPath, "script", "", "script `FILE` (- for standard input)")
	fs.BoolVar(&tokens, "tokens", false, "the script is token ids (as encode -tokens prints them)")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("decode takes no arguments besides flags, got %q", pos[0])
	}
	if scriptPath == "" {
		return usagef("decode needs -script FILE")
	}
	if scriptPath == "-" && w.file == "-" {
		return usagef("-workload and -script cannot both read standard input")
	}
	spec, err := w.load(e)
	if err != nil {
		return err
	}
	f, err := spec.Build()
	if err != nil {
		return err
	}
	data, err := readArg(e, scriptPath, maxScriptBytes)
	if err != nil {
		return err
	}
	if tokens {
		v, err := vocab.Default()
		if err != nil {
			return err
		}
		fields := strings.Fields(string(data))
		ids := make([]int, len(fields))
		for i, s := range fields {
			if ids[i], err = strconv.Atoi(s); err != nil {
				return fmt.Errorf("%s: token %d is %q, not an id", scriptPath, i, s)
			}
		}
		text, err := v.Decode(ids)
		if err != nil {
			return fmt.Errorf("%s: %w", scriptPath, err)
		}
		data = []byte(text)
	}
	tr, err := encode.Decode(ctx, f, data, encode.Options{})
	if err != nil {
		return fmt.Errorf("%s: %w", scriptPath, err)
	}
	_, err = e.stdout.Write(append(tr.AppendJSON(nil), '\n'))
	return err
}
