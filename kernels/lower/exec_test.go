package lower_test

import (
	"context"
	"errors"
	"fmt"
	"math"

	"dragonx/kernels/ir"
	"dragonx/kernels/lower"
)

// execute runs a lowered program on the CPU as the numerical gate will:
// the blocks of a grid one after the other, the threads of a block one at
// a time per barrier phase (each runs up to its next barrier, in the given
// order, before the next starts), shared and local memory and the
// program's global intermediates poisoned with NaN, every index checked.
// A test helper, not the gate: it evaluates the AST directly and slowly.
func execute(ctx context.Context, p *lower.Program, args [][]float32, descending bool) error {
	if len(args) != len(p.Params) {
		return fmt.Errorf("%d arguments for %d parameters", len(args), len(p.Params))
	}
	global := map[*ir.Buffer][]float32{}
	for i, b := range p.Params {
		global[b] = args[i]
	}
	for _, a := range p.Globals {
		global[a.Flat] = poisoned(a.Flat.Shape()[0])
	}
	for _, k := range p.Kernels {
		for bz := range k.Grid[2] {
			for by := range k.Grid[1] {
				for bx := range k.Grid[0] {
					if err := ctx.Err(); err != nil {
						return err
					}
					if err := runBlock(k, global, [3]int64{bx, by, bz}, descending); err != nil {
						return fmt.Errorf("%s block (%d, %d, %d): %w", k.Name, bx, by, bz, err)
					}
				}
			}
		}
	}
	return nil
}

func poisoned(n int64) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(math.NaN())
	}
	return s
}

// A thread runs the kernel body in its own goroutine, stopping at each
// barrier until the scheduler resumes it.
type thread struct {
	env    map[*ir.Var]int64
	mem    map[*ir.Buffer][]float32 // global, shared and this thread's local
	resume chan struct{}
	event  chan error // nil at a barrier, errDone at the end, or the failure
}

var errDone = errors.New("done")

func runBlock(k *lower.Kernel, global map[*ir.Buffer][]float32, bidx [3]int64, descending bool) error {
	shared := map[*ir.Buffer][]float32{}
	for _, a := range k.Allocs {
		if a.Scope == lower.ScopeShared {
			shared[a.Flat] = poisoned(a.Flat.Shape()[0])
		}
	}
	var ts []*thread
	for tz := range k.Block[2] {
		for ty := range k.Block[1] {
			for tx := range k.Block[0] {
				th := &thread{env: map[*ir.Var]int64{}, mem: map[*ir.Buffer][]float32{}, resume: make(chan struct{}), event: make(chan error)}
				for d, v := range k.BlockIdx {
					if v != nil {
						th.env[v] = bidx[d]
					}
				}
				for d, v := range k.ThreadIdx {
					if v != nil {
						th.env[v] = [3]int64{tx, ty, tz}[d]
					}
				}
				for b, s := range global {
					th.mem[b] = s
				}
				for b, s := range shared {
					th.mem[b] = s
				}
				for _, a := range k.Allocs {
					if a.Scope == lower.ScopeLocal {
						th.mem[a.Flat] = poisoned(a.Flat.Shape()[0])
					}
				}
				ts = append(ts, th)
			}
		}
	}
	if descending {
		for i, j := 0, len(ts)-1; i < j; i, j = i+1, j-1 {
			ts[i], ts[j] = ts[j], ts[i]
		}
	}
	for _, th := range ts {
		go func() {
			<-th.resume
			err := th.stmts(k.Body)
			if err == nil {
				err = errDone
			}
			th.event <- err
		}()
	}
	running := len(ts)
	var first error
	for phase := 0; running > 0; phase++ {
		atBarrier, done := 0, 0
		for _, th := range ts {
			if th.resume == nil {
				continue
			}
			th.resume <- struct{}{}
			switch err := <-th.event; {
			case err == nil:
				atBarrier++
			case errors.Is(err, errDone):
				done++
				th.resume = nil
				running--
			default:
				if first == nil {
					first = err
				}
				th.resume = nil
				running--
			}
		}
		if first == nil && atBarrier > 0 && done > 0 {
			first = fmt.Errorf("phase %d: %d threads reached a barrier and %d ended (divergent barrier)", phase, atBarrier, done)
		}
		if first != nil {
			for _, th := range ts { // let the others end
				if th.resume != nil {
					close(th.resume)
				}
			}
			return first
		}
	}
	return nil
}

func (th *thread) stmts(ss []lower.Stmt) error {
	for _, s := range ss {
		if err := th.stmt(s); err != nil {
			return err
		}
	}
	return nil
}

func (th *thread) stmt(s lower.Stmt) error {
	switch x := s.(type) {
	case *lower.Barrier:
		th.event <- nil
		if _, ok := <-th.resume; !ok {
			return errors.New("stopped")
		}
	case *lower.Block:
		return th.stmts(x.Body)
	case *lower.Loop:
		n, err := th.int(x.Extent)
		if err != nil {
			return err
		}
		for i := range n {
			th.env[x.Var] = i
			if err := th.stmts(x.Body); err != nil {
				return err
			}
		}
		delete(th.env, x.Var)
	case *lower.If:
		c, err := th.bool(x.Cond)
		if err != nil {
			return err
		}
		if c {
			return th.stmts(x.Then)
		}
		return th.stmts(x.Else)
	case *lower.Store:
		i, err := th.int(x.Index)
		if err != nil {
			return err
		}
		v, err := th.float(x.Value)
		if err != nil {
			return err
		}
		m := th.mem[x.Buffer]
		if i < 0 || i >= int64(len(m)) {
			return fmt.Errorf("store to %s[%d], out of its %d elements", x.Buffer.Name(), i, len(m))
		}
		m[i] = float32(v)
	default:
		return fmt.Errorf("unknown statement %T", s)
	}
	return nil
}

func (th *thread) int(e ir.Expr) (int64, error) {
	if v, ok := ir.EvalInt(e, th.env); ok {
		return v, nil
	}
	return 0, fmt.Errorf("cannot evaluate %s as an integer", ir.ExprString(e))
}

func (th *thread) bool(e ir.Expr) (bool, error) {
	switch x := e.(type) {
	case *ir.Binary:
		switch {
		case x.Op().IsCompare() && x.A().DType().IsFloat():
			a, err := th.float(x.A())
			if err != nil {
				return false, err
			}
			b, err := th.float(x.B())
			if err != nil {
				return false, err
			}
			switch x.Op() {
			case ir.OpEQ:
				return a == b, nil
			case ir.OpNE:
				return a != b, nil
			case ir.OpLT:
				return a < b, nil
			case ir.OpLE:
				return a <= b, nil
			case ir.OpGT:
				return a > b, nil
			}
			return a >= b, nil
		case x.Op() == ir.OpAnd || x.Op() == ir.OpOr:
			a, err := th.bool(x.A())
			if err != nil || (x.Op() == ir.OpAnd && !a) || (x.Op() == ir.OpOr && a) {
				return a, err
			}
			return th.bool(x.B())
		}
	case *ir.Not:
		a, err := th.bool(x.A())
		return !a, err
	}
	v, err := th.int(e)
	return v != 0, err
}

func (th *thread) float(e ir.Expr) (float64, error) {
	if e.DType().IsInt() || e.DType() == ir.Bool {
		if e.DType() == ir.Bool {
			b, err := th.bool(e)
			if b {
				return 1, err
			}
			return 0, err
		}
		v, err := th.int(e)
		return float64(v), err
	}
	switch x := e.(type) {
	case *ir.FloatImm:
		return x.Value(), nil
	case *ir.BufferLoad:
		i, err := th.int(x.Indices()[0])
		if err != nil {
			return 0, err
		}
		m := th.mem[x.Buffer()]
		if i < 0 || i >= int64(len(m)) {
			return 0, fmt.Errorf("load from %s[%d], out of its %d elements", x.Buffer().Name(), i, len(m))
		}
		return float64(m[i]), nil
	case *ir.Cast:
		return th.float(x.A())
	case *ir.Select:
		c, err := th.bool(x.Cond())
		if err != nil {
			return 0, err
		}
		if c {
			return th.float(x.True())
		}
		return th.float(x.False())
	case *ir.Binary:
		a, err := th.float(x.A())
		if err != nil {
			return 0, err
		}
		b, err := th.float(x.B())
		if err != nil {
			return 0, err
		}
		switch x.Op() {
		case ir.OpAdd:
			return a + b, nil
		case ir.OpSub:
			return a - b, nil
		case ir.OpMul:
			return a * b, nil
		case ir.OpDiv:
			return a / b, nil
		case ir.OpMin:
			return math.Min(a, b), nil
		case ir.OpMax:
			return math.Max(a, b), nil
		}
	case *ir.Call:
		args := x.Args()
		if x.Op() == ir.CallIfThenElse {
			c, err := th.bool(args[0])
			if err != nil {
				return 0, err
			}
			if c {
				return th.float(args[1])
			}
			return th.float(args[2])
		}
		vs := make([]float64, len(args))
		for i, a := range args {
			v, err := th.float(a)
			if err != nil {
				return 0, err
			}
			vs[i] = v
		}
		switch x.Op() {
		case ir.CallExp:
			return math.Exp(vs[0]), nil
		case ir.CallLog:
			return math.Log(vs[0]), nil
		case ir.CallSqrt:
			return math.Sqrt(vs[0]), nil
		case ir.CallRsqrt:
			return 1 / math.Sqrt(vs[0]), nil
		case ir.CallTanh:
			return math.Tanh(vs[0]), nil
		case ir.CallSigmoid:
			return 1 / (1 + math.Exp(-vs[0])), nil
		case ir.CallErf:
			return math.Erf(vs[0]), nil
		case ir.CallPow:
			return math.Pow(vs[0], vs[1]), nil
		case ir.CallFabs:
			return math.Abs(vs[0]), nil
		}
	}
	return 0, fmt.Errorf("cannot evaluate %s", ir.ExprString(e))
}
