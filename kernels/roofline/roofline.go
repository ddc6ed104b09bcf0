package roofline

import (
	"errors"
	"fmt"
	"math"

	"dragonx/kernels/gpumodel"
	"dragonx/kernels/ir"
)

// Work is a workload's compulsory work.
type Work struct {
	// FLOPs counts, for every block of the unscheduled function, the
	// executions of its body (the product of its enclosing loops'
	// extents) times the floating-point operations of the value it
	// stores (gpumodel.ExprFLOPs: an add, a multiply, a max, an exp are
	// one each). A reduction's init stores a constant: no FLOPs.
	FLOPs float64
	// Bytes is the size of every parameter buffer (inputs and outputs),
	// each counted once; intermediates are not compulsory.
	Bytes float64
}

// Of returns the work of an unscheduled function. It fails on a loop whose
// extent is not a constant (an unscheduled workload has none).
func Of(f *ir.PrimFunc) (Work, error) {
	var w Work
	if f == nil || f.Body == nil {
		return w, errors.New("roofline: no function")
	}
	for _, b := range f.Params {
		w.Bytes += float64(b.NumElements()) * float64(b.DType().Bytes())
	}
	flops, err := stmtFLOPs(f.Body, 1)
	if err != nil {
		return Work{}, fmt.Errorf("roofline: %s: %w", f.Name, err)
	}
	w.FLOPs = flops
	return w, nil
}

// stmtFLOPs is the FLOPs of s run times times.
func stmtFLOPs(s ir.Stmt, times float64) (float64, error) {
	switch x := s.(type) {
	case nil:
		return 0, nil
	case *ir.For:
		n, ok := x.ConstExtent()
		if !ok {
			return 0, fmt.Errorf("loop %s has a symbolic extent", x.Var.Name())
		}
		return stmtFLOPs(x.Body, times*float64(n))
	case *ir.BlockRealize:
		return stmtFLOPs(x.Block.Body, times) // the init stores a constant
	case *ir.Block:
		return stmtFLOPs(x.Body, times)
	case *ir.SeqStmt:
		total := 0.0
		for _, c := range x.Stmts {
			f, err := stmtFLOPs(c, times)
			if err != nil {
				return 0, err
			}
			total += f
		}
		return total, nil
	case *ir.IfThenElse:
		a, err := stmtFLOPs(x.Then, times)
		if err != nil {
			return 0, err
		}
		b, err := stmtFLOPs(x.Else, times)
		return max(a, b), err
	case *ir.BufferStore:
		return times * gpumodel.ExprFLOPs(x.Value), nil
	}
	return 0, fmt.Errorf("unexpected statement %T", s)
}

// Bound is a workload's roofline time on a device.
type Bound struct {
	// Compute is FLOPs at the FP32 peak, Memory bytes at the DRAM peak;
	// Seconds the larger, and Binds which ("compute" or "memory").
	Compute, Memory, Seconds float64
	Binds                    string
}

// Time returns w's roofline time on d.
func Time(w Work, d *gpumodel.Device) (Bound, error) {
	peak, bw := d.PeakFLOPS(), d.DRAMBytesPerSec
	if !(peak > 0) || !(bw > 0) {
		return Bound{}, fmt.Errorf("roofline: device %s has no peak (%g FLOP/s, %g B/s)", d.Target, peak, bw)
	}
	b := Bound{Compute: w.FLOPs / peak, Memory: w.Bytes / bw}
	b.Seconds, b.Binds = b.Compute, "compute"
	if b.Memory > b.Compute {
		b.Seconds, b.Binds = b.Memory, "memory"
	}
	return b, nil
}

// Fraction is roofline seconds over a latency in seconds: the share of the
// device's limit a kernel reaches. It fails on a latency that is not a
// positive finite number.
func Fraction(roofline, latency float64) (float64, error) {
	if !(latency > 0) || math.IsInf(latency, 1) {
		return 0, fmt.Errorf("roofline: latency %g s is not a positive time", latency)
	}
	if !(roofline >= 0) || math.IsInf(roofline, 1) {
		return 0, fmt.Errorf("roofline: roofline time %g s is not a time", roofline)
	}
	return roofline / latency, nil
}
